#pragma once
// Where results go, without ever replacing what is not ours (docs/formats.md, "Outputs"):
//  - "-" is standard output;
//  - a regular file, or a name that does not exist yet, is written atomically: a new
//    temporary file beside it (never an existing name) renamed over it, so a reader never
//    sees half a file; an existing file is replaced only when overwriting was asked for;
//  - a character device or a FIFO (/dev/null, /dev/stdout, a pipe from >(...)) is written
//    through as a stream: renaming over it would replace the device with a file;
//  - a symbolic link is written through to the file it names (the link stays a link),
//    by the rules above for that file; a link to nothing is refused;
//  - a folder, a block device or a socket is refused (output.not-regular).
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace ipusim {

// Throws the InputError write_output would throw for `path`, without writing anything.
void check_output(const std::string& path, bool overwrite);
void write_output(const std::string& path, const std::string& content, bool overwrite);
// The same for content written as it is made (a long trace), never held whole.
using ContentWriter = std::function<void(std::ostream&)>;
void write_output(const std::string& path, const ContentWriter& write, bool overwrite);

// Replaces (or creates) a file inside a folder ipusim writes (sweep and report folders):
// temporary file + rename, so a symbolic link at `path` is replaced, never followed.
// `durable`: fsync before the rename (results that cost a simulation to remake).
void replace_file(const std::string& path, const std::string& content, bool durable);
void replace_file(const std::string& path, const ContentWriter& write, bool durable);
// replace_file in two halves, for files made durable together (a sweep's points): the
// temporary file beside `path`, returned, then renamed over `path`. A temporary never
// committed is left for remove_temp_files.
std::string write_temp_file(const std::string& path, const ContentWriter& write, bool durable);
void commit_temp_file(const std::string& temp, const std::string& path);

// A new empty folder .NAME.tmp-PID-N beside `path`, to fill and then rename to `path` (a
// report appears whole or not at all); stale ones of killed writers are removed first.
std::string make_temp_folder(const std::string& path);

// Temporary files of this writer are named .NAME.tmp-PID-N; a killed writer leaves them
// behind, and the next write to the same NAME removes them (when PID no longer runs).
// Removes those in `folder` (not below it) and returns how many.
std::size_t remove_temp_files(const std::string& folder);

} // namespace ipusim

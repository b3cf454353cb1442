#pragma once
// Results are written to a temporary file beside the target and renamed into place,
// so a reader never sees half a file; an existing file is kept unless overwriting
// was asked for.
#include <functional>
#include <ostream>
#include <string>

namespace ipusim {

// Throws InputError when `path` exists and !overwrite, or when it cannot be written.
void write_file_atomically(const std::string& path, const std::string& content, bool overwrite);
// The same for content written to a stream as it is made (a long trace).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write, bool overwrite);

} // namespace ipusim

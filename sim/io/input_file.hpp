#pragma once
// Reading an input file safely: only regular files (a FIFO would block forever, a
// device like /dev/zero never ends), at most a size limit, and every failure of the
// file system (missing, permission, a folder, a symlink loop, a name too long, a NUL
// in the name) an InputError located where the path was given.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ipusim {

// Far above any model, config or scenario (BERT-Large's model is 0.1 MB).
constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;

struct InputFile {
  std::string text;
  std::uint64_t device = 0, inode = 0;  // the file's identity, whatever name reached it
};

// `named_in` and `pointer` say where the path was given: for a file named on the command
// line, the file itself and "/"; for a scenario's model, the scenario and "/model".
// Rules: file.missing, file.unreadable, file.not-regular, file.too-large, file.bad-name.
InputFile read_input_file(const std::string& path, const std::string& named_in, const std::string& pointer,
                          std::size_t max_bytes = kMaxInputBytes);

} // namespace ipusim

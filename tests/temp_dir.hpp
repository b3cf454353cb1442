#pragma once
// A fresh temporary folder for one test, removed with everything in it afterwards.
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ipusim::test {

class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ipusim-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder");
    root_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::string path(const std::string& name) const { return (root_ / name).string(); }
  std::string operator/(const std::string& name) const { return path(name); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  std::string write(const std::string& name, const char* text) const { return write(name, std::string(text)); }
  std::string write(const std::string& name, const nlohmann::json& doc) const { return write(name, doc.dump(2)); }
  std::size_t entries() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(root_)) ++n;
    return n;
  }

private:
  std::filesystem::path root_;
};

} // namespace ipusim::test

// The rule ids are an interface (tests and scripts match on them): the table in
// docs/formats.md ("Rule ids") must list exactly the rules the code raises, and every
// rule must be asserted by some test. Rules are found in the sources as the string
// literals passed as a rule: "category.name" with a documented category.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "sim/io/field_ranges.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = IPUSIM_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "| `rule.id` | meaning |" rows of the "### Rule ids" table.
std::set<std::string> documented_rules() {
  const std::string docs = read(kSource / "docs/formats.md");
  const auto start = docs.find("### Rule ids");
  REQUIRE(start != std::string::npos);
  std::set<std::string> rules;
  std::istringstream lines(docs.substr(start));
  static const std::regex row(R"(^\| `([a-z0-9]+(\.[a-z0-9-]+)+)` \|)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, row)) rules.insert(m[1]);
  return rules;
}

std::set<std::string> categories(const std::set<std::string>& rules) {
  std::set<std::string> out;
  for (const auto& r : rules) out.insert(r.substr(0, r.find('.')));
  return out;
}

// Quoted "category.name" literals in the files under `folder` with one of `extensions`,
// for the given categories, and "category.name: message" texts (the order generators' rule
// prefixes); file names ("sweep.json") are not rules.
std::set<std::string> literals(const fs::path& folder, const std::set<std::string>& known) {
  static const std::regex literal(R"re("([a-z]+)\.([a-z0-9]+(-[a-z0-9]+)*)("|: ))re");
  static const std::set<std::string> file_suffixes{"json", "jsonl", "csv", "md", "html", "svg", "tmp", "lock", "hpp",
                                                   "cpp", "py", "sh"};
  std::set<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const auto ext = entry.path().extension();
    if (ext != ".cpp" && ext != ".hpp") continue;
    const std::string text = read(entry.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), literal); it != std::sregex_iterator(); ++it)
      if (known.count((*it)[1]) && !file_suffixes.count((*it)[2])) out.insert((*it)[1].str() + "." + (*it)[2].str());
  }
  return out;
}

} // namespace

TEST_CASE("rule ids: the docs list exactly the rules the code raises", "[rules][docs]") {
  const std::set<std::string> documented = documented_rules();
  REQUIRE(documented.size() > 60);
  const std::set<std::string> raised = literals(kSource / "sim", categories(documented));
  for (const auto& r : raised) {
    INFO("raised in sim/ but not in docs/formats.md's rule table: " << r);
    CHECK(documented.count(r));
  }
  for (const auto& r : documented) {
    INFO("documented but raised nowhere in sim/: " << r);
    CHECK(raised.count(r));
  }
}

TEST_CASE("rule ids: every rule has a test that asserts it", "[rules][docs]") {
  const std::set<std::string> documented = documented_rules();
  std::set<std::string> tested = literals(kSource / "tests", categories(documented));
  // A rule a test matches as "[rule.id]" in a message counts too.
  std::string all_tests;
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "tests"))
    if (entry.path().extension() == ".cpp" && entry.path().filename() != "test_rule_ids.cpp")
      all_tests += read(entry.path());
  for (const auto& r : documented) {
    INFO("no test asserts " << r);
    CHECK((all_tests.find("\"" + r + "\"") != std::string::npos || all_tests.find("[" + r + "]") != std::string::npos));
  }
}

TEST_CASE("physical ranges: docs/formats.md's table is the range table's, line for line", "[ranges][docs]") {
  // The page shows what `ipusim list --ranges` prints (field_ranges_markdown): a field added,
  // or a bound, unit, rule or reason changed in field_ranges() without the page, fails here.
  const std::string docs = read(kSource / "docs/formats.md");
  const auto start = docs.find("## Physical ranges");
  REQUIRE(start != std::string::npos);
  const auto table = docs.find("| file | field | range |", start);
  REQUIRE(table != std::string::npos);
  const std::string page_table = docs.substr(table, docs.find("\n\n", table) + 1 - table);
  const std::string generated = ipusim::field_ranges_markdown();
  std::istringstream page_lines(page_table), generated_lines(generated);
  std::string page_line, generated_line;
  while (std::getline(generated_lines, generated_line)) {
    std::getline(page_lines, page_line);
    CHECK(page_line == generated_line);
  }
  CHECK(page_table == generated);
  // Each line once; the bounds as written: powers of two, of ten, and one less.
  CHECK_THAT(generated, Catch::Contains("| config | `/ipu/sramBytesPerTile` | [1, 2^30] | B |"));
  CHECK_THAT(generated, Catch::Contains("| config | `/ipu/minElementsPerTile` | [1, 2^31-1] | elements |"));
  CHECK_THAT(generated, Catch::Contains("| config | `/links/*/ipus/*` | [0, 1e6-1] |"));
  CHECK_THAT(generated, Catch::Contains("| config | `/links/*/latencySeconds` | 0 or [1e-12, 10] | s |"));
  CHECK_THAT(generated, Catch::Contains("| sweep | `/axes/*/range/step` | (0, 1e300] |"));
  CHECK_THAT(generated, Catch::Contains("| config | `/ipu/tileArchitecture/memcpyBytesPerCycle` | [0.25, 256] |"));
}

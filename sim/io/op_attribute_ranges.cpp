#include "sim/io/op_attribute_ranges.hpp"

#include <type_traits>

#include "sim/io/field_ranges.hpp"

namespace ipusim {

void check_attribute_range(const std::string& name, const AttributeValue& value, const std::string& file,
                           const std::string& pointer) {
  const std::string pattern = "/ops/0/attributes/" + name;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
          if (const FieldRange* range = find_field_range(Format::Model, pattern))
            check_field_range(*range, static_cast<double>(v), std::to_string(v), file, pointer);
        } else if constexpr (!std::is_same_v<T, std::string>) {
          const FieldRange* range = find_field_range(Format::Model, pattern + "/0");
          for (std::size_t k = 0; range && k < v.size(); ++k)
            check_field_range(*range, static_cast<double>(v[k]), std::to_string(v[k]), file,
                              pointer + "/" + std::to_string(k));
        }
      },
      value);
}

} // namespace ipusim

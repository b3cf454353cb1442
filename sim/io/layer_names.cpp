#include "sim/io/layer_names.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace ipusim {

namespace {

// "/layer1/layer1.0/conv1/Conv" or "layer1.0.conv1.weight" -> its parts; "/" and "." both separate.
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : name) {
    if (c == '/' || c == '.') {
      if (!part.empty()) parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  return parts;
}

bool has_digit(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The name with each run of digits replaced by '#': "layer1.0" -> "layer#.#".
std::string template_of(const std::string& key) {
  std::string t;
  for (char c : key) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (t.empty() || t.back() != '#') t += '#';
    } else {
      t += c;
    }
  }
  return t;
}

// Every prefix of a name that ends in a numbered part, leaving out the last part.
void numbered_prefixes(const std::string& name, std::map<std::string, std::string>& key_of_template) {
  const auto parts = name_parts(name);
  std::string prefix;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    prefix += (i ? "." : "") + parts[i];
    if (has_digit(parts[i])) key_of_template.emplace(template_of(prefix), prefix);
  }
}

} // namespace

DetectedLayers detect_layers_by_name(const std::vector<NamedNode>& nodes) {
  std::vector<std::map<std::string, std::string>> keys(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    numbered_prefixes(nodes[i].name, keys[i]);
    for (const auto& w : nodes[i].weights) numbered_prefixes(w, keys[i]);
  }
  std::map<std::string, std::pair<int, std::set<std::string>>> coverage;  // template -> nodes, keys
  for (const auto& k : keys)
    for (const auto& [t, key] : k) {
      coverage[t].first++;
      coverage[t].second.insert(key);
    }
  DetectedLayers out;
  for (const auto& [t, c] : coverage)
    if (c.second.size() >= 2) out.candidates.push_back({t, c.first, static_cast<int>(c.second.size())});
  std::sort(out.candidates.begin(), out.candidates.end(), [](const LayerTemplate& a, const LayerTemplate& b) {
    if (a.nodes != b.nodes) return a.nodes > b.nodes;
    if (a.keys != b.keys) return a.keys > b.keys;
    return a.pattern < b.pattern;
  });
  if (out.candidates.empty()) return out;
  out.pattern = out.candidates.front().pattern;
  std::map<std::string, int> index;
  int current = -1, last_keyed = -1;
  out.layer_of_node.assign(nodes.size(), -1);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto it = keys[i].find(out.pattern);
    if (it != keys[i].end()) {
      auto [pos, added] = index.emplace(it->second, static_cast<int>(out.names.size()));
      if (added) out.names.push_back(it->second);
      current = std::max(current, pos->second);  // a node never moves back to an earlier layer
      last_keyed = static_cast<int>(i);
    }
    out.layer_of_node[i] = current;
  }
  for (std::size_t i = static_cast<std::size_t>(last_keyed) + 1; i < nodes.size(); ++i)
    out.layer_of_node[i] = static_cast<int>(out.names.size());
  return out;
}

} // namespace ipusim

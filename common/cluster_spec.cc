#include "common/cluster_spec.h"

#include <algorithm>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr const char* kKeys[] = {"pod", "leaf", "node", "gpu", "nic", "numa", "core", "nvlink", "mem", "link"};

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument("cluster spec '" + std::string(text) + "': " + why +
                         " (e.g. \"leaf:2 node:8 gpu:8\"; keys: pod, leaf, node, gpu, nic, numa, core, nvlink, mem, "
                         "link; '+' joins groups of other hosts)");
}

}  // namespace

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text) {
  ClusterSpec spec;
  spec.text = std::string(Trim(text));
  bool old_name = false;
  for (const std::string& group_text : Split(spec.text, '+')) {
    ClusterGroupSpec group;
    group.text = std::string(Trim(group_text));
    for (const std::string& word : Split(group.text, ' ')) {
      if (word.empty()) continue;
      const size_t colon = word.find(':');
      std::string key = word.substr(0, colon);
      if (colon == std::string::npos) return Bad(text, "'" + word + "' is not KEY:N");
      const auto n = ParseInt(word.substr(colon + 1));
      if (key == "switch") {
        key = "leaf";
        old_name = true;
      }
      if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
        return Bad(text, "'" + word + "' has no known key");
      }
      if (!n || *n < 0 || *n > 100000) return Bad(text, "'" + word + "' needs a whole number from 0 to 100000");
      if (!group.given.emplace(key, static_cast<int>(*n)).second) return Bad(text, key + " given twice in one group");
    }
    if (group.given.empty()) return Bad(text, "a group is empty");
    spec.groups.push_back(std::move(group));
  }
  if (old_name) spec.notes.push_back("'switch:' in a cluster spec is the old name of 'leaf:' and is still read; write leaf:");
  return spec;
}

Status OnlyKeys(const ClusterSpec& spec, std::initializer_list<const char*> modelled, const std::string& who) {
  for (const ClusterGroupSpec& g : spec.groups) {
    for (const auto& entry : g.given) {
      const std::string& key = entry.first;  // a plain name: clang 14 cannot capture structured bindings
      if (std::find_if(modelled.begin(), modelled.end(), [&](const char* m) { return key == m; }) == modelled.end()) {
        std::string keys;
        for (const char* m : modelled) keys += std::string(keys.empty() ? "" : ", ") + m;
        return InvalidArgument("cluster spec '" + spec.text + "': " + who + " does not model " + key +
                               ": (its keys: " + keys + ")");
      }
    }
  }
  return Status::Ok();
}

}  // namespace gpulaunch

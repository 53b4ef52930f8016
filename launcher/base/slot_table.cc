#include "launcher/base/slot_table.h"

#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string ListOrDash(const std::vector<int>& ids) { return ids.empty() ? "-" : FormatIdList(ids); }

Status Bad(const std::string& why) {
  return InvalidArgument(std::string(kSlotTableEnv) + " is malformed (" + why +
                         "); it is written by gpulaunch: start ranks through gpulaunch, not by hand");
}

}  // namespace

std::string EncodeSlotRow(const RankSlot& r) {
  return r.host + "/" + std::to_string(r.local_rank) + "/" + std::to_string(r.local_size) + "/" +
         std::to_string(r.node_rank) + "/" + (r.bound ? "1" : "0") + "/" + ListOrDash(r.cpus) + "/" +
         std::to_string(r.mem_node) + "/" + ListOrDash(r.gpus) + "/" + (r.host_has_gpus ? "1" : "0") + "/" +
         (r.nic.empty() ? "-" : r.nic) + "/" + (r.leaf_switch.empty() ? "-" : r.leaf_switch);
}

StatusOr<RankSlot> DecodeSlotRow(const std::string& text, int rank) {
  const auto f = Split(text, '/');
  // 10 fields: a row from a gpulaunch before leaf switches (none then).
  if (f.size() != 10 && f.size() != 11) {
    return Bad("rank " + std::to_string(rank) + " has " + std::to_string(f.size()) + " fields, not 11");
  }
  RankSlot r;
  r.rank = rank;
  r.host = f[0];
  const auto local = ParseInt(f[1]), local_size = ParseInt(f[2]), node = ParseInt(f[3]), mem = ParseInt(f[6]);
  const auto cpus = ParseIdList(f[5] == "-" ? "" : f[5]);
  const auto gpus = ParseIdList(f[7] == "-" ? "" : f[7]);
  if (r.host.empty() || !local || !local_size || !node || !mem || !cpus || !gpus || (f[4] != "0" && f[4] != "1") ||
      (f[8] != "0" && f[8] != "1")) {
    return Bad("rank " + std::to_string(rank) + " has a malformed field");
  }
  r.local_rank = static_cast<int>(*local);
  r.local_size = static_cast<int>(*local_size);
  r.node_rank = static_cast<int>(*node);
  r.bound = f[4] == "1";
  r.cpus = *cpus;
  r.mem_node = static_cast<int>(*mem);
  r.gpus = *gpus;
  r.host_has_gpus = f[8] == "1";
  r.nic = f[9] == "-" ? "" : f[9];
  r.leaf_switch = f.size() < 11 || f[10] == "-" ? "" : f[10];
  return r;
}

std::string EncodeSlotTable(const SlotTable& t, bool with_rows) {
  const int world = t.ranks.empty() ? t.world : static_cast<int>(t.ranks.size());
  std::string s = "v3|" + t.job_id + "|" + t.plan_hash + "|" + t.master_addr + "|" + std::to_string(t.master_port) +
                  "|" + (t.control.empty() ? "-" : t.control) + "|" + std::to_string(world) + "|" +
                  (t.layout.empty() ? "-" : t.layout) + "|";
  if (!with_rows || t.ranks.empty()) return s + "-";
  for (size_t i = 0; i < t.ranks.size(); ++i) {
    if (i) s += ' ';
    s += EncodeSlotRow(t.ranks[i]);
  }
  return s;
}

StatusOr<SlotTable> DecodeSlotTable(const std::string& text) {
  const auto head = Split(text, '|');
  if (head.size() != 9 || head[0] != "v3") return Bad("expected 9 '|' fields starting with v3");
  SlotTable t;
  t.job_id = head[1];
  t.plan_hash = head[2];
  t.master_addr = head[3];
  const auto port = ParseInt(head[4]);
  const auto world = ParseInt(head[6]);
  if (!port || !world || *world < 1 || *world > (int64_t{1} << 24)) return Bad("bad port or world size");
  t.master_port = static_cast<int>(*port);
  t.control = head[5] == "-" ? "" : head[5];
  t.layout = head[7] == "-" ? "" : head[7];
  t.world = static_cast<int>(*world);
  if (head[8] == "-") {
    if (t.control.empty()) return Bad("no rank rows and no control address to ask for them");
    return t;
  }
  const auto rows = Split(head[8], ' ');
  if (static_cast<int64_t>(rows.size()) != *world) return Bad("world size does not match the rank rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    GL_ASSIGN_OR_RETURN(RankSlot r, DecodeSlotRow(rows[i], static_cast<int>(i)));
    t.ranks.push_back(std::move(r));
  }
  return t;
}

}  // namespace gpulaunch

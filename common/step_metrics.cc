#include "common/step_metrics.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/json.h"

namespace gpulaunch {
namespace {

// A record's number: non-finite values (a broken clock) are written as 0,
// since JSON has neither NaN nor infinity.
double Finite(double v) { return std::isfinite(v) ? v : 0; }

StatusOr<double> NumberField(const Json& object, const std::string& key, const std::string& where, bool required) {
  const Json* v = object.Find(key);
  if (!v) {
    if (!required) return 0.0;
    return InvalidArgument(where + ": field \"" + key + "\" is missing");
  }
  if (!v->is(Json::Type::kNumber) || !std::isfinite(v->AsNumber()) || v->AsNumber() < 0) {
    return InvalidArgument(where + ": field \"" + key + "\" must be a non-negative number");
  }
  return v->AsNumber();
}

}  // namespace

double StepMetrics::comm_s() const {
  double total = 0;
  for (const GroupTraffic& g : groups) total += g.comm_s;
  return total;
}

// One line through nlohmann-json (Json::Write breaks lines between objects
// of an array, and a record must stay one line); doubles keep every digit.
std::string StepMetricsJson(const StepMetrics& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["rank"] = m.rank;
  j["step"] = m.step;
  j["step_s"] = Finite(m.step_s);
  j["compute_s"] = Finite(m.compute_s);
  j["bubble_s"] = Finite(m.bubble_s);
  j["bubble_theory"] = Finite(m.bubble_theory);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const GroupTraffic& g : m.groups) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["group"] = g.group;
    e["comm_s"] = Finite(g.comm_s);
    e["bytes"] = g.bytes;
    e["calls"] = g.calls;
    e["inter_host_bytes"] = g.inter_host_bytes;
    groups.push_back(std::move(e));
  }
  j["groups"] = std::move(groups);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<StepMetrics> ParseStepMetricsJson(std::string_view line, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json j, ParseJson(line, origin));
  if (!j.is(Json::Type::kObject)) return InvalidArgument(origin + ": a metrics record must be a JSON object");
  StepMetrics m;
  GL_ASSIGN_OR_RETURN(double rank, NumberField(j, "rank", origin, true));
  GL_ASSIGN_OR_RETURN(double step, NumberField(j, "step", origin, true));
  if (rank > 1e9 || step > 9e15) return InvalidArgument(origin + ": rank or step out of range");
  m.rank = static_cast<int>(rank);
  m.step = static_cast<int64_t>(step);
  GL_ASSIGN_OR_RETURN(m.step_s, NumberField(j, "step_s", origin, true));
  GL_ASSIGN_OR_RETURN(m.compute_s, NumberField(j, "compute_s", origin, true));
  GL_ASSIGN_OR_RETURN(m.bubble_s, NumberField(j, "bubble_s", origin, false));
  GL_ASSIGN_OR_RETURN(m.bubble_theory, NumberField(j, "bubble_theory", origin, false));
  const Json* groups = j.Find("groups");
  if (groups && !groups->is(Json::Type::kArray)) return InvalidArgument(origin + ": \"groups\" must be an array");
  if (groups) {
    for (const Json& g : groups->items()) {
      const Json* name = g.is(Json::Type::kObject) ? g.Find("group") : nullptr;
      if (!name || !name->is(Json::Type::kString) || name->AsString().empty()) {
        return InvalidArgument(origin + ": every entry of \"groups\" needs a \"group\" name");
      }
      GroupTraffic t;
      t.group = name->AsString();
      GL_ASSIGN_OR_RETURN(t.comm_s, NumberField(g, "comm_s", origin, true));
      GL_ASSIGN_OR_RETURN(double bytes, NumberField(g, "bytes", origin, false));
      GL_ASSIGN_OR_RETURN(double calls, NumberField(g, "calls", origin, false));
      GL_ASSIGN_OR_RETURN(double inter_host, NumberField(g, "inter_host_bytes", origin, false));
      t.bytes = static_cast<uint64_t>(std::min(bytes, 1.8e19));
      t.calls = static_cast<uint64_t>(std::min(calls, 1.8e19));
      t.inter_host_bytes = static_cast<uint64_t>(std::min(inter_host, 1.8e19));
      m.groups.push_back(std::move(t));
    }
  }
  std::sort(m.groups.begin(), m.groups.end(), [](const GroupTraffic& a, const GroupTraffic& b) { return a.group < b.group; });
  return m;
}

}  // namespace gpulaunch

#include "common/step_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json.h"

namespace gpulaunch {
namespace {

// Json::Write breaks lines between objects of an array; a metrics record must
// stay one line, so it is written here.
std::string Number(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

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

std::string StepMetricsJson(const StepMetrics& m) {
  std::string out = "{\"rank\":" + std::to_string(m.rank) + ",\"step\":" + std::to_string(m.step) +
                    ",\"step_s\":" + Number(m.step_s) + ",\"compute_s\":" + Number(m.compute_s) +
                    ",\"bubble_s\":" + Number(m.bubble_s) + ",\"bubble_theory\":" + Number(m.bubble_theory) +
                    ",\"groups\":[";
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const GroupTraffic& g = m.groups[i];
    out += (i ? ",{" : "{") + std::string("\"group\":") + JsonQuote(g.group) + ",\"comm_s\":" + Number(g.comm_s) +
           ",\"bytes\":" + std::to_string(g.bytes) + ",\"calls\":" + std::to_string(g.calls) + "}";
  }
  return out + "]}";
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
      t.bytes = static_cast<uint64_t>(std::min(bytes, 1.8e19));
      t.calls = static_cast<uint64_t>(std::min(calls, 1.8e19));
      m.groups.push_back(std::move(t));
    }
  }
  std::sort(m.groups.begin(), m.groups.end(), [](const GroupTraffic& a, const GroupTraffic& b) { return a.group < b.group; });
  return m;
}

}  // namespace gpulaunch

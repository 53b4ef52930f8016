// Reading gpulaunch's own JSON files field by field, with errors that name
// origin:line, the field and the values allowed (the one reader behind
// cluster files and link files).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/strings.h"

namespace gpulaunch {

class JsonReader {
 public:
  explicit JsonReader(const std::string& origin) : origin_(origin) {}
  Status Error(const Json& at, const std::string& what) const {
    return InvalidArgument(origin_ + ":" + std::to_string(at.line()) + ": " + what);
  }
  StatusOr<const Json*> Field(const Json& obj, const std::string& key, Json::Type type) const {
    if (!obj.is(Json::Type::kObject)) return Error(obj, "expected an object");
    const Json* v = obj.Find(key);
    if (!v) return Error(obj, "missing \"" + key + "\"");
    if (!v->is(type)) return Error(*v, "\"" + key + "\" has the wrong type");
    return v;
  }
  StatusOr<std::string> Str(const Json& o, const std::string& k) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kString));
    return v->AsString();
  }
  StatusOr<double> Num(const Json& o, const std::string& k) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kNumber));
    return v->AsNumber();
  }
  // A whole number within [lo, hi].
  StatusOr<int64_t> Int(const Json& o, const std::string& k, int64_t lo, int64_t hi) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kNumber));
    const double d = v->AsNumber();
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != static_cast<double>(static_cast<int64_t>(d))) {
      return Error(*v, "\"" + k + "\" is " + v->Write().substr(0, v->Write().size() - 1) + "; give a whole number from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
    }
    return static_cast<int64_t>(d);
  }
  // A finite number within [0, hi] (speeds, sizes).
  StatusOr<double> Amount(const Json& o, const std::string& k, double hi, const std::string& unit) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kNumber));
    const double d = v->AsNumber();
    if (!(d >= 0 && d <= hi)) {
      char range[64];
      std::snprintf(range, sizeof range, "from 0 to %g", hi);
      return Error(*v, "\"" + k + "\" is " + v->Write().substr(0, v->Write().size() - 1) + "; give " + unit + " " +
                           range);
    }
    return d;
  }
  StatusOr<std::vector<int>> IdList(const Json& o, const std::string& k) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kString));
    auto ids = ParseIdList(v->AsString());
    if (!ids) return Error(*v, "\"" + k + "\" is not an id list like \"0-3,8\"");
    return *ids;
  }
  StatusOr<std::vector<std::string>> StrList(const Json& o, const std::string& k) const {
    GL_ASSIGN_OR_RETURN(const Json* v, Field(o, k, Json::Type::kArray));
    std::vector<std::string> out;
    for (const Json& s : v->items()) {
      if (!s.is(Json::Type::kString)) return Error(s, "\"" + k + "\" must hold strings");
      out.push_back(s.AsString());
    }
    return out;
  }

 private:
  std::string origin_;
};

}  // namespace gpulaunch

// A small JSON value, reader and writer for gpulaunch's own files (cluster
// descriptions). Objects keep their key order, numbers are doubles written
// in the shortest form that reads back exactly, so write(read(x)) reproduces
// what write produced, byte for byte. Parse errors name
// origin:line. Standard library only, as everything in common/.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  Json(bool b) : type_(Type::kBool), bool_(b) {}                              // NOLINT
  Json(double d) : type_(Type::kNumber), number_(d) {}                        // NOLINT
  Json(int i) : type_(Type::kNumber), number_(i) {}                           // NOLINT
  Json(int64_t i) : type_(Type::kNumber), number_(static_cast<double>(i)) {}  // NOLINT
  Json(const char* s) : type_(Type::kString), string_(s) {}                   // NOLINT
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}        // NOLINT
  static Json Array() { Json j; j.type_ = Type::kArray; return j; }
  static Json Object() { Json j; j.type_ = Type::kObject; return j; }

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  bool AsBool() const { return bool_; }
  double AsNumber() const { return number_; }
  const std::string& AsString() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  int line() const { return line_; }  // where it started in the parsed text

  Json& Push(Json v) { items_.push_back(std::move(v)); return items_.back(); }
  Json& Set(const std::string& key, Json v);
  const Json* Find(const std::string& key) const;

  // Compact writer with newlines between array items of objects, for diffs.
  std::string Write() const;

 private:
  friend class JsonParser;
  void WriteTo(std::string& out, int indent) const;
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  int line_ = 0;
};

StatusOr<Json> ParseJson(std::string_view text, const std::string& origin);

}  // namespace gpulaunch

#include "launcher/core/subcommand_parser.h"

#include <sstream>

#include "common/strings.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

constexpr char kPositional[] = "gpulaunch-positional-arguments";

}  // namespace

SubcommandParser::SubcommandParser(std::string name, std::string usage, std::string about)
    : name_(std::move(name)), usage_(std::move(usage)), about_(std::move(about)), options_("Options", 100, 50) {
  options_.add_options()("help,h", "show this help");
}

StatusOr<po::variables_map> SubcommandParser::Parse(const std::vector<std::string>& args) const {
  const std::string see = "; see 'gpulaunch " + name_ + " --help'";
  po::variables_map vm;
  try {
    // Words that are not options are collected under a hidden name, so the
    // error can name the first of them.
    po::options_description all;
    all.add(options_).add_options()(kPositional, po::value<std::vector<std::string>>());
    po::positional_options_description rest;
    rest.add(kPositional, -1);
    po::store(po::command_line_parser(args).options(all).positional(rest).style(po::command_line_style::unix_style)
                  .run(),
              vm);
    po::notify(vm);
    if (vm.count(kPositional)) {
      return Error("unexpected argument '" + vm[kPositional].as<std::vector<std::string>>().front() +
                   "': it takes options only" + see);
    }
  } catch (const po::error& e) {
    return Error(OptionErrorText(e, args) + see);
  }
  return vm;
}

int SubcommandParser::WordsAfter(const std::string& token) const {
  const po::option_description* option = nullptr;
  bool value_attached = false;
  if (token.rfind("--", 0) == 0 && token.size() > 2) {
    const size_t eq = token.find('=');
    const std::string name = token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name.empty()) return -1;  // "--=x": no option's name (Boost would call it ambiguous and throw)
    try {
      option = options_.find_nothrow(name, false);
    } catch (const po::error&) {
      return -1;  // not one of ours: the parser that reads it says why
    }
    value_attached = eq != std::string::npos;
  } else if (token.size() >= 2 && token[0] == '-' && token[1] != '-') {
    for (const auto& o : options_.options()) {
      if (o->canonical_display_name(po::command_line_style::allow_dash_for_short) == token.substr(0, 2)) option = o.get();
    }
    value_attached = token.size() > 2;
  }
  if (!option) return -1;
  return option->semantic()->max_tokens() > 0 && !value_attached ? 1 : 0;
}

std::string SubcommandParser::Help() const {
  std::ostringstream s;
  s << "usage: gpulaunch " << name_ << " " << usage_ << "\n";
  if (!about_.empty()) s << about_ << (about_.back() == '\n' ? "" : "\n");
  s << "\n" << options_;
  std::string text = s.str();
  if (text.back() != '\n') text += "\n";
  return text;
}

StatusOr<int> IntOption(const SubcommandParser& parser, const po::variables_map& vm, const char* name, int fallback,
                        int lo, int hi, const char* unit) {
  if (!vm.count(name)) return fallback;
  const std::string v = vm[name].as<std::string>();
  const auto n = ParseInt(v);
  if (!n || *n < lo || *n > hi) {
    return parser.Error(std::string("--") + name + " " + v + ": give " + unit + " from " + std::to_string(lo) +
                        " to " + std::to_string(hi));
  }
  return static_cast<int>(*n);
}

StatusOr<std::string> FormatOption(const SubcommandParser& parser, const po::variables_map& vm,
                                   const std::string& fallback) {
  if (!vm.count("format")) return fallback;
  const std::string f = vm["format"].as<std::string>();
  if (f != "table" && f != "json") return parser.Error("--format " + f + ": choose table or json");
  return f;
}

std::string OptionErrorText(const po::error& e, const std::vector<std::string>& args) {
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e)) {
    return "unknown option '" + unknown->get_option_name() + "'";
  }
  if (const auto* syntax = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    // Name the option as given: "--budget" last, or "--once=1".
    if (syntax->kind() == po::invalid_syntax::missing_parameter) return syntax->get_option_name() + " needs a value";
    if (syntax->kind() == po::invalid_syntax::extra_parameter) return syntax->get_option_name() + " takes no value";
    return "malformed option '" + syntax->get_option_name() + "'";
  }
  for (const std::string& a : args) {
    if (a.find('%') != std::string::npos) {
      return "cannot parse the options near '" + a.substr(0, 80) + "' (check that option's value)";
    }
  }
  return e.what();
}

}  // namespace gpulaunch

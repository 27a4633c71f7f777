// replayssm: the CLI. Parses `replayssm <command> [options]`, turns every error into one line and an exit code.
#include <cmath>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "core/errors.h"
#include "core/version.h"

namespace replayssm::cli {

namespace {
std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}
std::string& cmdline_storage() {
  static std::string s;
  return s;
}

template <class T>
bool any_to(const boost::any& a, std::string& out) {
  if (const T* p = boost::any_cast<T>(&a)) {
    std::ostringstream os;
    os.precision(17);
    os << *p;
    out = os.str();
    return true;
  }
  return false;
}

template <class T>
bool vec_to(const boost::any& a, std::string& out) {
  if (const auto* p = boost::any_cast<std::vector<T>>(&a)) {
    std::ostringstream os;
    os.precision(17);
    for (std::size_t i = 0; i < p->size(); ++i) os << (i ? "," : "") << (*p)[i];
    out = os.str();
    return true;
  }
  return false;
}

void print_overview(std::ostream& os) {
  os << "replayssm " << tool_version() << " (" << git_sha() << ")\n"
     << "Numerical accuracy study toolkit for the decode state of state-space models (Mamba-2, Gated DeltaNet).\n\n"
     << "usage: replayssm <command> [options]      replayssm <command> --help\n\ncommands:\n";
  for (const auto& [name, c] : registry()) {
    os << "  " << name;
    for (std::size_t i = name.size(); i < 12; ++i) os << ' ';
    os << c.summary << "\n";
  }
  os << "\nglobal options:\n  -h [ --help ]   this overview\n  --version       tool version and git sha\n"
     << "\nexit codes: 0 ok, 1 validation failed, 2 bad input or option, 3 no GPU for a CUDA backend, 4 internal error\n";
}
}  // namespace

Registrar::Registrar(Command c) {
  std::string name = c.name;
  registry().emplace(std::move(name), std::move(c));
}

const std::map<std::string, Command>& commands() { return registry(); }

void check_option_values(const po::parsed_options& parsed, const po::variables_map& vm) {
  for (const auto& o : parsed.options) {
    if (o.unregistered || o.string_key.empty() || !vm.count(o.string_key) || o.value.size() != 1) continue;
    const boost::any& a = vm[o.string_key].value();
    const std::string& raw = o.value.front();
    const auto first = raw.find_first_not_of(" \t");
    const bool negative = first != std::string::npos && raw[first] == '-';
    if (negative && (boost::any_cast<unsigned long long>(&a) || boost::any_cast<unsigned long>(&a) ||
                     boost::any_cast<unsigned>(&a)))
      throw UserError("--" + o.string_key + ": '" + raw + "' is negative (expected an integer >= 0)");
    if (const double* d = boost::any_cast<double>(&a); d && !std::isfinite(*d))
      throw UserError("--" + o.string_key + ": '" + raw + "' is not a finite number");
  }
}
const std::string& command_line() { return cmdline_storage(); }

std::map<std::string, std::string> resolved_options(const po::variables_map& vm) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : vm) {
    if (name == "help") continue;
    const boost::any& a = value.value();
    std::string s;
    if (any_to<std::string>(a, s) || any_to<int>(a, s) || any_to<long>(a, s) || any_to<unsigned>(a, s) ||
        any_to<unsigned long>(a, s) || any_to<long long>(a, s) || any_to<unsigned long long>(a, s) ||
        any_to<double>(a, s) || any_to<bool>(a, s) || vec_to<std::string>(a, s) || vec_to<int>(a, s) ||
        vec_to<double>(a, s)) {
      out[name] = s;
    } else if (a.empty()) {
      out[name] = "true";  // bool_switch-like flags stored without a value
    } else {
      out[name] = "<unprintable>";
    }
  }
  return out;
}

}  // namespace replayssm::cli

int main(int argc, char** argv) {
  using namespace replayssm;
  using namespace replayssm::cli;
  {
    std::ostringstream os;
    for (int i = 0; i < argc; ++i) os << (i ? " " : "") << argv[i];
    cmdline_storage() = os.str();
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]) == "help") {
    print_overview(std::cout);
    return argc < 2 ? kExitBadInput : kExitOk;
  }
  const std::string name = argv[1];
  if (name == "--version") {
    std::cout << "replayssm " << tool_version() << " (git " << git_sha() << ", " << compiler_id() << ")\n";
    return kExitOk;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::cerr << "replayssm: unknown command '" << name << "' (try `replayssm --help`)\n";
    return kExitBadInput;
  }
  const Command& cmd = it->second;
  po::options_description desc("replayssm " + cmd.name + ": " + cmd.summary + "\n\noptions");
  desc.add_options()("help,h", "show this help");
  try {
    cmd.add_options(desc);
    po::variables_map vm;
    po::positional_options_description pos;
    if (!cmd.positional.empty()) pos.add(cmd.positional.c_str(), -1);
    const po::parsed_options parsed = po::command_line_parser(argc - 1, argv + 1).options(desc).positional(pos).run();
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << desc;
      if (!cmd.example.empty()) std::cout << "\nexample:\n  " << cmd.example << "\n";
      return kExitOk;
    }
    po::notify(vm);
    check_option_values(parsed, vm);
    return cmd.run(vm);
  } catch (const po::error& e) {
    std::cerr << "replayssm " << name << ": error: " << e.what() << " (see `replayssm " << name << " --help`)\n";
    return kExitBadInput;
  } catch (const UserError& e) {
    std::cerr << "replayssm " << name << ": error: " << e.what() << "\n";
    return e.code();
  } catch (const std::bad_alloc&) {
    // The commands estimate what they need first (core/memory_budget.h); this is what an estimate missed.
    std::cerr << "replayssm " << name << ": error: out of memory: the inputs or options need more memory than is "
              << "free (reduce --tokens or the input's size)\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "replayssm " << name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

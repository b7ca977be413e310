// test_plugins.h — the small C test plugins of tests/host/plugins, compiled from source at test
// time: TestPlugins opens them in-process with dlopen (for the dispatcher and pipeline tests),
// CompilePackagedPlugin builds one as a package would ship it (for a signed package that a real
// `clawguard host` loads, see HostFixtureOptions::plugin_source).
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PLUGINS_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PLUGINS_H_

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "clawguard/plugin.h"
#include "host/dispatch/plugin_dispatch.h"
#include "support/temp_dir.h"

namespace clawguard::host::testing {

// PluginSource is tests/host/plugins/|name|.c.
inline std::filesystem::path PluginSource(const std::string& name) {
  return std::filesystem::path(CLAWGUARD_SOURCE_DIR) / "tests" / "host" / "plugins" / (name + ".c");
}

// CompilePackagedPlugin compiles plugin |name| to |so| with the flags a shipped plugin needs to
// pass the loader's ELF checks (as examples/acme-orders is built), with |extra| flags (e.g.
// -DNAME=VALUE). "" on success, else cc's error.
inline std::string CompilePackagedPlugin(const std::string& name, const std::string& so,
                                         const std::vector<std::string>& extra = {}) {
  const std::filesystem::path include = std::filesystem::path(CLAWGUARD_SOURCE_DIR) / "include";
  std::vector<std::string> argv = {"cc",
                                   "-std=gnu11",
                                   "-shared",
                                   "-fPIC",
                                   "-O1",
                                   "-fvisibility=hidden",
                                   "-o",
                                   so,
                                   PluginSource(name).string(),
                                   "-I" + include.string(),
                                   "-I" + PluginSource(name).parent_path().string(),
                                   "-Wl,-z,noexecstack",
                                   "-Wl,--as-needed",
                                   "-Wl,-z,relro",
                                   "-Wl,-z,now",
                                   "-Wl,--no-undefined"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = clawguard::testing::RunCommand(argv);
  return r.exit_code == 0 ? std::string() : "cc failed for " + name + ": " + r.err;
}

// TestPlugins compiles every test plugin once per test binary and keeps it loaded (never
// dlclosed: a timed-out plugin's thread may still run).
class TestPlugins {
 public:
  static TestPlugins& Get() {
    static TestPlugins instance;
    return instance;
  }
  const cg_plugin* Open(const std::string& name) {
    std::lock_guard lock(mu_);
    if (auto it = loaded_.find(name); it != loaded_.end()) return it->second;
    const std::string so = dir_.Sub(name + ".so");
    const std::filesystem::path include = std::filesystem::path(CLAWGUARD_SOURCE_DIR) / "include";
    auto r = clawguard::testing::RunCommand({"cc", "-shared", "-fPIC", "-o", so,
                                             PluginSource(name).string(), "-I" + include.string(),
                                             "-I" + PluginSource(name).parent_path().string()});
    if (r.exit_code != 0) {
      ADD_FAILURE() << "cc failed for " << name << ": " << r.err;
      return nullptr;
    }
    void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ADD_FAILURE() << dlerror();
      return nullptr;
    }
    handles_[name] = handle;
    auto entry = reinterpret_cast<const cg_plugin* (*)()>(dlsym(handle, "clawguard_plugin_v1"));
    if (entry == nullptr) return nullptr;
    const cg_plugin* p = entry();
    if (p == nullptr || p->init(HostApi()) != 0) return nullptr;
    loaded_[name] = p;
    return p;
  }
  template <typename T>
  T* Symbol(const std::string& plugin, const char* symbol) {
    std::lock_guard lock(mu_);
    return static_cast<T*>(dlsym(handles_.at(plugin), symbol));
  }

 private:
  std::mutex mu_;
  clawguard::testing::TempDir dir_;
  std::map<std::string, const cg_plugin*> loaded_;
  std::map<std::string, void*> handles_;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PLUGINS_H_

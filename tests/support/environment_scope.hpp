// EnvironmentScope: sets an environment variable for a scope (a test case that states what it
// checks for one setting, TENEX_PASSES=all say, whatever the suite runs under), then restores
// it.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

/// Sets an environment variable for its lifetime, then restores it.
struct EnvironmentScope {
  EnvironmentScope(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~EnvironmentScope() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  EnvironmentScope(const EnvironmentScope&) = delete;
  EnvironmentScope& operator=(const EnvironmentScope&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Linked into every test executable: before main, the XDG folders point into the build tree, so the tests' session
// stores and caches (step-cost curves, tree choices) never mix with the user's, and the user's never with the
// tests'. (ctest's ENVIRONMENT property could not carry both: gtest_discover_tests flattens its PROPERTIES list, so
// only the first variable arrived and the tests shared ~/.cache/specscope, where two of them raced on one file.)
#include <cstdlib>

namespace {

const bool kXdgSet = [] {
  setenv("XDG_DATA_HOME", SPECSCOPE_TEST_XDG_DATA, 1);
  setenv("XDG_CACHE_HOME", SPECSCOPE_TEST_XDG_CACHE, 1);
  return true;
}();

}  // namespace

// The target that owns the test executables' precompiled header (tests/CMakeLists.txt, specscope_test_pch): CMake
// builds a precompiled header for a target with a source, and the tests reuse this one. Never run.
int main() { return 0; }

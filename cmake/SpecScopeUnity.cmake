# Unity builds for the clean builds nobody edits in: SPECSCOPE_UNITY=ON compiles each library's sources in batches,
# one compiler run per batch. Most of a source's object code is not its own: nlohmann/json's parser and serializer,
# fmt's formatting and the standard containers are instantiated, optimized and (under a sanitizer) instrumented again
# in every source that uses them, about four fifths of the code of e.g. runs/tree_tuner.cpp under ASan. A batch does
# that once. scripts/sanitize.sh turns it on for the ASan and TSan builds; the main build stays one object per source,
# so an edit recompiles one file and a missing #include is still caught there.
option(SPECSCOPE_UNITY "Compile each library's sources in batches (for clean, one-off builds such as the sanitizers')" OFF)
if(SPECSCOPE_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  # Small enough that the 2-core host always has two batches to compile, large enough to share most instantiations.
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 12)
endif()

# specscope_no_unity(SOURCES...): sources that must stay alone, e.g. those whose `#pragma GCC target` regions or
# file-wide macros would carry into the next source of a batch.
function(specscope_no_unity)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

// What the scenario tests share: scratch files (models, .npy and .pb inputs,
// folders of fake GPU libraries), the first line of an output, and the table
// of first lines the suite prints at its end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vigil::scenarios {

// A folder for this process's files, removed at exit.
std::filesystem::path Scratch(const std::string& name);

// A .npy v1.0 file whose header says `descr` and `shape`, holding `values`
// elements of `element_bytes` each (the header and the data may disagree).
std::string WriteNpy(const std::string& name, const std::string& descr, const std::vector<int64_t>& shape,
                     size_t values, size_t element_bytes);
// An ONNX TensorProto file (.pb) of float32 with `dims`, holding `values` floats.
std::string WritePb(const std::string& name, const std::vector<int64_t>& dims, size_t values);

// A folder holding the files of the fake libraries (tests/doctor/fakes/<target>).
std::string FakeLibraryFolder(const std::string& name, const std::vector<std::string>& targets);

std::string FirstLine(const std::string& text);

// Runs argv[0] (found on PATH) with the rest as arguments; stdout and stderr
// captured. `ok` is false when it could not start or died of a signal.
struct ProgramResult {
  bool ok = false;
  int exit_code = -1;
  std::string out, err;
};
ProgramResult RunProgram(const std::vector<std::string>& argv);

// Records a row of the table: the class of failure and its first line.
void Record(const std::string& failure_class, const std::string& first_line);
// Prints the table (markdown) and writes it to VIGIL_SCENARIO_TABLE.
void PrintTable();

}  // namespace vigil::scenarios

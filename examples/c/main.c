/* vigil from C: run a model on a .npy file, write its outputs as .npy, and
 * show what vigil says about two classic input mistakes.
 *
 *   vigil_example_c MODEL.onnx INPUT.npy OUTPUT_DIR [cpu|cuda]
 *
 * Only include/vigil/vigil.h is used; link with -lvigil (see README.md).
 * Exits 0 when the model ran and both mistakes were refused with a diagnosis.
 */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <vigil/vigil.h>

/* Prints a failing status (the whole diagnosis: summary, facts, likely
 * causes, fixes) and releases it. */
static void print_status(const char* what, vigil_status* status) {
  fprintf(stderr, "%s failed [%s]:\n%s\n", what, vigil_status_code_name(status), vigil_status_text(status));
  vigil_status_release(status);
}

static void print_shape(const int64_t* dims, size_t rank) {
  printf("[");
  for (size_t i = 0; i < rank; ++i) printf(i ? ",%lld" : "%lld", (long long)dims[i]);
  printf("]");
}

/* The output's name as a file name, the way `vigil run --output-dir` writes
 * it: characters outside [A-Za-z0-9._-] become '_'. */
static void safe_file_name(const char* name, char* out, size_t size) {
  size_t n = 0;
  for (const char* c = name; *c && n + 5 < size; ++c) {
    const int ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                   *c == '.' || *c == '_' || *c == '-';
    out[n++] = ok ? *c : '_';
  }
  out[n] = '\0';
  strcat(out, ".npy");
}

/* Writes an output as DIR/<name>.npy and prints its dtype, shape and first
 * values. Returns 0 on success. */
static int save_and_print(const vigil_value* value, const char* dir) {
  vigil_tensor t;
  vigil_value_as_tensor(value, &t); /* a view of the value, valid while it lives */

  char file[512], path[1024];
  safe_file_name(vigil_value_name(value), file, sizeof file);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  vigil_status* status = vigil_tensor_file_write_npy(path, &t);
  if (status) {
    print_status("writing an output", status);
    return 1;
  }

  printf("  %s %s", vigil_value_name(value), vigil_dtype_name(t.dtype));
  print_shape(t.shape, t.rank);
  if (t.dtype == VIGIL_DTYPE_FLOAT32) {
    const float* v = (const float*)vigil_value_data(value);
    const size_t count = vigil_value_byte_size(value) / sizeof(float);
    printf(" first values:");
    for (size_t i = 0; i < count && i < 5; ++i) printf(" %g", v[i]);
  }
  printf("\n    -> %s\n", path);
  return 0;
}

/* The model's first input shape with symbolic dims (-1) taken as 1. Returns
 * the element count. */
static size_t concrete_shape(const vigil_io_info* info, int64_t* shape) {
  size_t count = 1;
  for (size_t i = 0; i < info->rank; ++i) {
    shape[i] = info->dims[i] < 0 ? 1 : info->dims[i];
    count *= (size_t)shape[i];
  }
  return count;
}

/* Seed 003: an image buffer sized with channels * width * height of the
 * camera frame (640x480), not of the tensor the model takes. In ONNX Runtime
 * this was an intermittent access violation in a host-to-device copy; vigil
 * checks the byte size against the shape before reading anything. Returns 1
 * when vigil refused it. */
static int wrong_element_count(const vigil_session* session, const vigil_io_info* info) {
  int64_t shape[8];
  concrete_shape(info, shape);
  const int64_t channels = info->rank == 4 ? shape[1] : 3;
  const size_t count = (size_t)channels * 640 * 480; /* img.channels() * img.total() */
  float* image = calloc(count, sizeof(float));
  if (!image) return 0;

  vigil_tensor t = {0};
  t.name = info->name;
  t.dtype = VIGIL_DTYPE_FLOAT32;
  t.shape = shape; /* the model's shape ... */
  t.rank = info->rank;
  t.data = image;
  t.byte_size = count * sizeof(float); /* ... over a buffer of another size */
  t.memory = VIGIL_MEMORY_HOST;
  t.source = "a 640x480 camera frame";

  vigil_value* outputs[16] = {0};
  size_t output_count = vigil_session_output_count(session);
  if (output_count > 16) output_count = 16;
  vigil_status* status = vigil_session_run(session, &t, 1, NULL, output_count, outputs);
  free(image);
  printf("\n== seed 003: %zu floats (%lld channels x 640 x 480) for input '%s' ", count, (long long)channels,
         info->name);
  print_shape(shape, info->rank);
  printf("\n");
  if (!status) {
    printf("not refused?!\n");
    for (size_t i = 0; i < output_count; ++i) vigil_value_release(outputs[i]);
    return 0;
  }
  printf("%s\n", vigil_status_text(status));
  const int refused = vigil_status_code(status) == VIGIL_ERROR_INVALID_INPUT;
  vigil_status_release(status);
  return refused;
}

/* Seed 000: int32 data given to a float32 input (np.int32 where np.float32
 * was meant). Same size in bytes, so only the dtype can tell. Returns 1 when
 * vigil refused it. */
static int wrong_dtype(const vigil_session* session, const vigil_io_info* info) {
  int64_t shape[8];
  const size_t count = concrete_shape(info, shape);
  int32_t* data = calloc(count, sizeof(int32_t));
  if (!data) return 0;

  vigil_tensor t = {0};
  t.name = info->name;
  t.dtype = VIGIL_DTYPE_INT32;
  t.shape = shape;
  t.rank = info->rank;
  t.data = data;
  t.byte_size = count * sizeof(int32_t);
  t.memory = VIGIL_MEMORY_HOST;

  vigil_value* outputs[16] = {0};
  size_t output_count = vigil_session_output_count(session);
  if (output_count > 16) output_count = 16;
  vigil_status* status = vigil_session_run(session, &t, 1, NULL, output_count, outputs);
  free(data);
  printf("\n== seed 000: int32 data for the %s input '%s'\n", vigil_dtype_name(info->dtype), info->name);
  if (!status) {
    printf("not refused?!\n");
    for (size_t i = 0; i < output_count; ++i) vigil_value_release(outputs[i]);
    return 0;
  }
  printf("%s\n", vigil_status_text(status));
  const int refused = vigil_status_code(status) == VIGIL_ERROR_INVALID_INPUT;
  vigil_status_release(status);
  return refused;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy OUTPUT_DIR [cpu|cuda]\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const char* input_path = argv[2];
  const char* output_dir = argv[3];
  const int use_cuda = argc > 4 && strcmp(argv[4], "cuda") == 0;
  printf("vigil %s (API %u)\n", vigil_version_string(), (unsigned)vigil_api_version());

  /* Options: CPU (the default), or CUDA with the CPU for nodes it cannot run. */
  vigil_session_options options;
  vigil_session_options_init(&options);
  const vigil_backend cuda_then_cpu[] = {VIGIL_BACKEND_CUDA, VIGIL_BACKEND_CPU};
  if (use_cuda) {
    options.backends = cuda_then_cpu;
    options.backend_count = 2;
  }

  vigil_session* session = NULL;
  vigil_status* status = vigil_session_create(model_path, &options, &session);
  if (status) {
    print_status("loading the model", status);
    return 1;
  }
  if (vigil_session_input_count(session) != 1) {
    fprintf(stderr, "this example feeds models with one input\n");
    vigil_session_release(session);
    return 1;
  }
  vigil_io_info input;
  status = vigil_session_input_info(session, 0, &input);
  if (status || input.rank == (size_t)-1 || input.rank > 8) {
    if (status) print_status("describing the input", status);
    vigil_session_release(session);
    return 1;
  }
  printf("model %s: input '%s' %s", model_path, input.name, vigil_dtype_name(input.dtype));
  print_shape(input.dims, input.rank);
  printf(", runs on %s\n", vigil_session_backends(session));
  /* With CUDA: which module was loaded, the GPU stack, nodes that fell back. */
  if (use_cuda) printf("session notes: %s\n", vigil_session_notes_json(session));

  /* The input file, as a tensor bound to the model's first input. */
  vigil_value* file = NULL;
  status = vigil_tensor_file_read(input_path, &file);
  if (status) {
    print_status("reading the input", status);
    vigil_session_release(session);
    return 1;
  }
  vigil_tensor x;
  vigil_value_as_tensor(file, &x);
  x.name = input.name;
  x.source = input_path; /* named in any diagnosis about this input */

  /* Run; every output comes back in host memory, in model order. */
  size_t output_count = vigil_session_output_count(session);
  vigil_value** outputs = calloc(output_count ? output_count : 1, sizeof *outputs);
  int failed = 0;
  status = vigil_session_run(session, &x, 1, NULL, output_count, outputs);
  vigil_value_release(file);
  if (status) {
    print_status("running the model", status);
    failed = 1;
  } else {
    if (mkdir(output_dir, 0777) != 0 && errno != EEXIST) {
      perror(output_dir);
      failed = 1;
    }
    printf("outputs (%zu):\n", output_count);
    for (size_t i = 0; i < output_count && !failed; ++i) failed = save_and_print(outputs[i], output_dir);
    for (size_t i = 0; i < output_count; ++i) vigil_value_release(outputs[i]);
  }
  free(outputs);

  /* The two mistakes of the user stories: each comes back as a status that
   * names the input, what the model expects, what was given, and why. */
  if (!failed && input.dtype == VIGIL_DTYPE_FLOAT32) {
    if (!wrong_element_count(session, &input)) failed = 1;
    if (!wrong_dtype(session, &input)) failed = 1;
  }

  vigil_session_release(session);
  return failed;
}

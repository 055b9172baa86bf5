/* vigil: an ONNX inference runtime for NVIDIA GPUs in which every failure is a
 * diagnosis. This is its C interface, the stable ABI of libvigil.so.
 *
 * Conventions
 * - Every call that can fail returns a vigil_status*: NULL means success; a
 *   non-NULL status carries the whole diagnosis (code, one-line summary,
 *   facts, ranked causes, fixes, text and JSON renderings) and must be
 *   released with vigil_status_release.
 * - Objects are opaque handles, created by *_create / vigil_session_create
 *   and released by the matching *_release (NULL is accepted and ignored).
 * - Strings are UTF-8 and NUL-terminated. A string returned by vigil lives
 *   as long as the object it came from.
 * - No C++ type crosses this interface; only vigil_* symbols are exported.
 * - Nothing here aborts the process or reads past a caller's buffer: every
 *   input buffer is checked (dtype, shape, byte size, host or device) before
 *   anything runs, and a mismatch is a status naming the input, what the
 *   model expects, what was given, and the likely cause.
 * - vigil_session_run and vigil_session_run_with_binding may be called from
 *   many threads at once on one session (each thread gets its own CUDA
 *   stream and library handles). An io_binding belongs to one thread at a
 *   time.
 *
 * Versioning: VIGIL_API_VERSION grows when calls are added; structs that may
 * grow begin with a struct_size field that the caller sets with the matching
 * *_init macro, which passes the size of the caller's struct, so an older
 * caller keeps working with a newer library.
 */
#ifndef VIGIL_VIGIL_H_
#define VIGIL_VIGIL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VIGIL_EXPORT __attribute__((visibility("default")))
#else
#define VIGIL_EXPORT
#endif

/* The interface version this header describes; see vigil_api_version(). */
/* 3: vigil_session_options.measure_first_run. 4: tf32x3_convolutions. */
#define VIGIL_API_VERSION 5

/* ---- Status ----------------------------------------------------------- */

/* What kind of problem a failing status describes. */
typedef enum vigil_error_code {
  VIGIL_OK = 0,
  VIGIL_ERROR_INVALID_MODEL = 1, /* the model file or graph is malformed */
  VIGIL_ERROR_INVALID_INPUT = 2, /* an input (or argument) does not fit the model */
  VIGIL_ERROR_UNSUPPORTED = 3,   /* valid, but vigil or the chosen backend cannot do it */
  VIGIL_ERROR_OUT_OF_MEMORY = 4, /* a predicted or actual allocation does not fit */
  VIGIL_ERROR_ENVIRONMENT = 5,   /* drivers, libraries, variables, files outside the model */
  VIGIL_ERROR_DEVICE_FAULT = 6,  /* the device failed while running */
  VIGIL_ERROR_CRASHED = 7,       /* the isolated process running the model died */
  VIGIL_ERROR_INTERNAL = 8       /* a bug in vigil */
} vigil_error_code;

typedef struct vigil_status vigil_status;

VIGIL_EXPORT vigil_error_code vigil_status_code(const vigil_status* status);
/* "InvalidInput", "Environment", ... ("OK" for NULL). */
VIGIL_EXPORT const char* vigil_status_code_name(const vigil_status* status);
/* The first line of every failure: the most likely cause and its fix,
 * "<cause> — fix: <fix>" ("" for NULL). Since API version 2. */
VIGIL_EXPORT const char* vigil_status_headline(const vigil_status* status);
/* One line naming what was observed to go wrong, the symptom ("" for NULL). */
VIGIL_EXPORT const char* vigil_status_summary(const vigil_status* status);
/* Observed facts: name/value pairs (expected, got, versions, paths). */
VIGIL_EXPORT size_t vigil_status_fact_count(const vigil_status* status);
VIGIL_EXPORT const char* vigil_status_fact_name(const vigil_status* status, size_t index);
VIGIL_EXPORT const char* vigil_status_fact_value(const vigil_status* status, size_t index);
/* Likely causes, most likely first, each with its evidence ("" if none). */
VIGIL_EXPORT size_t vigil_status_cause_count(const vigil_status* status);
VIGIL_EXPORT const char* vigil_status_cause(const vigil_status* status, size_t index);
VIGIL_EXPORT const char* vigil_status_cause_evidence(const vigil_status* status, size_t index);
/* Concrete fixes. */
VIGIL_EXPORT size_t vigil_status_fix_count(const vigil_status* status);
VIGIL_EXPORT const char* vigil_status_fix(const vigil_status* status, size_t index);
/* The whole diagnosis as vigil prints it (several lines: "error [Code]:
 * <headline>", then the symptom and the other facts, causes and fixes). */
VIGIL_EXPORT const char* vigil_status_text(const vigil_status* status);
/* The whole diagnosis as a JSON object, the headline first:
 * {"headline", "code", "summary", "facts":[{"name","value"}], "causes":[{"what","evidence"}], "fixes":[...]}. */
VIGIL_EXPORT const char* vigil_status_json(const vigil_status* status);
VIGIL_EXPORT void vigil_status_release(vigil_status* status);

/* ---- Library ------------------------------------------------------------ */

/* VIGIL_API_VERSION of the loaded library; a caller built against a newer
 * header than the library can refuse to continue. */
VIGIL_EXPORT uint32_t vigil_api_version(void);
/* "0.1.0" */
VIGIL_EXPORT const char* vigil_version_string(void);

/* The doctor's report on this machine's GPU stack (driver, CUDA runtime,
 * cuDNN and its sub-libraries, cuBLASLt, GPUs; each finding with its fix) as
 * JSON. Probes in child processes, so a crashing library is a finding. The
 * string is the caller's: free it with vigil_string_release. */
VIGIL_EXPORT vigil_status* vigil_doctor_report_json(char** json);
VIGIL_EXPORT void vigil_string_release(char* text);

/* ---- Tensors -------------------------------------------------------------- */

/* Element types; the numbers are ONNX's TensorProto.DataType. */
typedef enum vigil_dtype {
  VIGIL_DTYPE_UNDEFINED = 0,
  VIGIL_DTYPE_FLOAT32 = 1,
  VIGIL_DTYPE_UINT8 = 2,
  VIGIL_DTYPE_INT8 = 3,
  VIGIL_DTYPE_UINT16 = 4,
  VIGIL_DTYPE_INT16 = 5,
  VIGIL_DTYPE_INT32 = 6,
  VIGIL_DTYPE_INT64 = 7,
  VIGIL_DTYPE_STRING = 8, /* not accepted as an input buffer */
  VIGIL_DTYPE_BOOL = 9,
  VIGIL_DTYPE_FLOAT16 = 10,
  VIGIL_DTYPE_FLOAT64 = 11,
  VIGIL_DTYPE_UINT32 = 12,
  VIGIL_DTYPE_UINT64 = 13,
  VIGIL_DTYPE_BFLOAT16 = 16
} vigil_dtype;

/* "float32", "float16", "int64", ... ("undefined" for unknown values). */
VIGIL_EXPORT const char* vigil_dtype_name(vigil_dtype dtype);

/* Where a buffer lives. */
typedef enum vigil_memory {
  VIGIL_MEMORY_HOST = 0,
  VIGIL_MEMORY_CUDA = 1 /* device memory of the session's CUDA device */
} vigil_memory;

/* A caller's buffer, described. vigil never writes an input buffer and never
 * reads past byte_size: a byte size that does not equal the element count
 * times the element size is refused, with the likely cause (bytes passed as
 * elements, channels*total, an NHWC image for an NCHW input, a short
 * buffer). */
typedef struct vigil_tensor {
  const char* name;     /* input or output name; NULL or "": by position (inputs only) */
  vigil_dtype dtype;
  const int64_t* shape; /* rank dims; may be NULL when rank is 0 */
  size_t rank;
  void* data;           /* host or device pointer; may be NULL only when empty */
  size_t byte_size;     /* size of the buffer at data, in bytes */
  vigil_memory memory;
  int device_id;        /* CUDA device ordinal when memory is VIGIL_MEMORY_CUDA */
  const char* source;   /* where the data came from ("cat.npy"), for messages; may be NULL */
} vigil_tensor;

/* A tensor vigil produced (a run's output); owns its memory. */
typedef struct vigil_value vigil_value;

VIGIL_EXPORT const char* vigil_value_name(const vigil_value* value);
VIGIL_EXPORT vigil_dtype vigil_value_dtype(const vigil_value* value);
VIGIL_EXPORT size_t vigil_value_rank(const vigil_value* value);
VIGIL_EXPORT const int64_t* vigil_value_shape(const vigil_value* value);
VIGIL_EXPORT const void* vigil_value_data(const vigil_value* value);
/* The same, writable: for buffers from vigil_session_allocate. */
VIGIL_EXPORT void* vigil_value_mutable_data(vigil_value* value);
VIGIL_EXPORT size_t vigil_value_byte_size(const vigil_value* value);
VIGIL_EXPORT vigil_memory vigil_value_memory(const vigil_value* value);
VIGIL_EXPORT void vigil_value_release(vigil_value* value);
/* The value as a vigil_tensor (named as the value), e.g. to pass an output
 * or a read file on as an input. Valid while the value lives. */
VIGIL_EXPORT void vigil_value_as_tensor(const vigil_value* value, vigil_tensor* tensor);

/* Reads a tensor file: .npy (numpy) or an ONNX TensorProto (.pb), checked
 * against its own header (a file whose data does not match its header is a
 * status that says how it differs). The value is in host memory. */
VIGIL_EXPORT vigil_status* vigil_tensor_file_read(const char* path, vigil_value** value);
/* Writes a host tensor as .npy. */
VIGIL_EXPORT vigil_status* vigil_tensor_file_write_npy(const char* path, const vigil_tensor* tensor);

/* ---- Session options ------------------------------------------------------- */

/* Backends ("execution providers"), in order of preference: each node runs on
 * the first listed backend that supports it. */
typedef enum vigil_backend {
  VIGIL_BACKEND_CPU = 0, /* the reference backend; always available */
  VIGIL_BACKEND_CUDA = 1 /* libvigil_cuda.so: cuDNN, cuBLASLt, vigil's kernels */
} vigil_backend;

typedef enum vigil_layout {
  VIGIL_LAYOUT_AUTO = 0, /* 2D convolutions run channels-last where faster: on the GPU, and
                            float32 ones on the CPU where oneDNN is loaded */
  VIGIL_LAYOUT_NCHW = 1  /* every convolution as the model says */
} vigil_layout;

/* Every option, passed once to vigil_session_create. Initialise with
 * vigil_session_options_init, then set fields. Strings are copied. */
typedef struct vigil_session_options {
  uint32_t struct_size;          /* set by vigil_session_options_init */
  /* Backends in order. backend_count 0: {CPU}. When CUDA is listed and CPU is
   * not, nothing falls back: a node the CUDA backend cannot run fails the
   * session's creation, naming the node and why. List CPU after CUDA to let
   * such nodes run on the CPU. */
  const vigil_backend* backends;
  size_t backend_count;
  int device_id;                 /* CUDA device ordinal (default 0) */
  int allow_tf32;                /* float32 convolutions and products may use TF32 (default 0) */
  int deterministic;             /* only deterministic algorithms (default 0) */
  uint64_t gpu_mem_limit;        /* refuse runs whose planned device memory exceeds this; 0: free memory */
  vigil_layout layout;           /* default VIGIL_LAYOUT_AUTO */
  int cuda_graphs;               /* record fixed-shape runs as CUDA graphs and replay them (default 0) */
  const char* cudnn_log_file;    /* write cuDNN's API log here; its tail joins cuDNN failures (default NULL) */
  int tune;                      /* autotune convolutions and products on first use (default 0) */
  const char* tuning_cache_file; /* algorithm choices read (and, with tune, appended) (default NULL) */
  int constant_folding;          /* evaluate constant subgraphs at load (default 1) */
  const char* cuda_module_path;  /* libvigil_cuda.so to load; NULL: next to libvigil.so, then the usual places */
  /* Run each vigil_session_run in a child process, so that a crash (in cuDNN,
   * the driver, a kernel) becomes a VIGIL_ERROR_CRASHED status naming the
   * signal, the library and the node instead of killing the caller. The
   * child is vigil-worker, installed beside libvigil.so's CUDA module; it
   * loads the model once at creation (so creation fails as it would in this
   * process) and again for every run. Inputs are checked here first. Host
   * inputs and outputs only: IOBinding, plans, profiles and device buffers
   * are refused with VIGIL_ERROR_UNSUPPORTED. Default 0. */
  int isolate;
  double isolate_timeout_s;      /* with isolate: kill a run after this long (0: no limit) */
  /* Threads for one CPU node's matrix products (MatMul, Gemm, Einsum, ...):
   * 0 (default) as many as the CPU has, 1 the calling thread alone, N at
   * most N. Concurrent runs on many threads are always allowed. */
  int intra_op_num_threads;
  /* Synchronise after every device node, so vigil_session_profile's
   * per-node times are device times (slower runs; default 0). */
  int enable_profiling;
  /* Run a float32 model in float16: at creation its float32 weights become
   * float16 (clamped to +-65504) and the nodes that take float16 compute in
   * it, with Casts where a node stays float32 (If, Loop, quantization,
   * CumSum, ...). Inputs and outputs keep their float32 types. Faster on
   * tensor cores, less exact: compare the outputs (vigil bench measures
   * both on the model). Default 0. */
  int run_as_float16;
  /* Without allow_tf32, large float32 matrix products (MatMul, Gemm) run as
   * three TF32 tensor-core products of split operands ("3xTF32"): about
   * 1.6x faster on transformers at batch 64, with an error near float32's
   * (about 2e-5 relative on ViT-B/16 and BERT-base, against 1e-6 on CUDA
   * cores and 1e-3 with TF32; docs/cuda.md, "Numerics"). 0: every float32
   * product on CUDA cores. Default 1. */
  int allow_tf32x3;
  /* Without tune, the operations whose library pick is known to be often
   * slow time their candidates on their first run and keep the fastest for
   * the session, recording nothing: float matrix products (not int8) of
   * at least 2^31 multiply-adds, and memory-bound float32 convolutions of at
   * least 2^28 without TF32 (docs/tuning.md). That costs up to about 0.3 s
   * of a large model's first run. 0: every operation takes cuDNN's or
   * cuBLASLt's first pick, for the fastest first result (runs may be
   * slower). deterministic measures nothing either way. Default 1.
   * (API version 3.) */
  int measure_first_run;
  /* Without allow_tf32, float32 convolutions run as three TF32 tensor-core
   * convolutions of split operands, as allow_tf32x3 does for products, in
   * channels-last layout: 1.24x faster on ResNet-50 at batch 64 on an H200
   * than the default (which runs most as exact products), slower at batch 1;
   * tensor cores truncate where they add, and the error grows with a
   * convolution's reduction and with the depth of the network: 3.2e-4
   * relative on a random-weight ResNet-50 and 5.5e-5 on MobileNetV2, against
   * about 2e-5 on CUDA cores and 2e-2 with TF32 (docs/cuda.md, "Numerics").
   * vigil bench measures both on the model. Default 0. (API version 4; it
   * takes bytes that were padding before, so the struct's size is
   * unchanged.) */
  int tf32x3_convolutions;
} vigil_session_options;

/* Sets every field of the caller's struct to its default, and struct_size
 * to `size`: writes at most `size` bytes, so a caller built against an
 * older header (a smaller struct) is never written past its end. Call it
 * through the vigil_session_options_init macro, which passes
 * sizeof(*options). A size larger than this library's struct (a caller
 * built against a newer header) gets this library's fields and size, and
 * zeros after them; check vigil_api_version() to refuse that case. A size
 * no version of the struct had is written (zeros) but refused by
 * vigil_session_create, naming struct_size. (API version 5.) */
VIGIL_EXPORT void vigil_session_options_init_sized(vigil_session_options* options, size_t size);
/* The unsized initialiser of API versions 2 to 4, kept for programs built
 * against their headers: it writes the struct as versions 3 and 4 had it
 * (136 bytes on LP64), and will never write more. A program built against
 * API version 2's header (a struct of 120 or 128 bytes) is overrun by it:
 * rebuild such programs. New code gets the macro below. */
VIGIL_EXPORT void vigil_session_options_init(vigil_session_options* options);
#define vigil_session_options_init(options) vigil_session_options_init_sized((options), sizeof(*(options)))

/* ---- Models ------------------------------------------------------------------- */

/* The model at model_path read, validated and described as JSON, without
 * creating a session (so it works for models no backend can run): ir_version,
 * producer, opsets, inputs and outputs (dtype, shape with symbolic dims as
 * strings), node and op counts, parameters. with_shapes adds every node's
 * inferred output types and the FLOPs of Conv, ConvTranspose, Gemm and
 * MatMul. Free *json with vigil_string_release. */
VIGIL_EXPORT vigil_status* vigil_model_describe_json(const char* model_path, int with_shapes, char** json);

/* ---- Sessions ----------------------------------------------------------------- */

typedef struct vigil_session vigil_session;

/* Reads, validates and prepares a model: shape inference, partitioning,
 * loading the CUDA module when asked (its failures come with the doctor's
 * findings). options may be NULL (defaults). */
VIGIL_EXPORT vigil_status* vigil_session_create(const char* model_path, const vigil_session_options* options,
                                                vigil_session** session);
/* The same from a model in memory (the bytes are copied). */
VIGIL_EXPORT vigil_status* vigil_session_create_from_memory(const void* model_data, size_t model_size,
                                                            const vigil_session_options* options,
                                                            vigil_session** session);
VIGIL_EXPORT void vigil_session_release(vigil_session* session);

/* The model's inputs (those without an initializer default) and outputs. */
typedef struct vigil_io_info {
  const char* name;
  vigil_dtype dtype;
  size_t rank;            /* (size_t)-1 when the rank is unknown */
  const int64_t* dims;    /* rank entries; -1 where a dim is symbolic or unknown */
  const char* const* dim_names; /* rank entries; the symbolic name, or "" for fixed or unnamed dims */
} vigil_io_info;

VIGIL_EXPORT size_t vigil_session_input_count(const vigil_session* session);
VIGIL_EXPORT size_t vigil_session_output_count(const vigil_session* session);
/* Fill *info; its pointers live as long as the session. */
VIGIL_EXPORT vigil_status* vigil_session_input_info(const vigil_session* session, size_t index, vigil_io_info* info);
VIGIL_EXPORT vigil_status* vigil_session_output_info(const vigil_session* session, size_t index, vigil_io_info* info);

/* The backends nodes really run on, in the order asked, those with no node
 * omitted ("cuda", "cpu"); a comma-separated list that lives as long as the
 * session. */
VIGIL_EXPORT const char* vigil_session_backends(const vigil_session* session);
/* What the session wants its user to know, as JSON: where nodes fell back and
 * why, layout, CUDA graph and autotuning notes, the module loaded. */
VIGIL_EXPORT const char* vigil_session_notes_json(const vigil_session* session);
/* Where each node runs, as JSON: {"backends", "nodes_per_backend",
 * "fallbacks": [{"node", "backend", "reason"}]} (`vigil inspect --backend`). */
VIGIL_EXPORT const char* vigil_session_describe_json(const vigil_session* session);

/* Checks inputs against the model without running anything. bound_dims_json
 * (may be NULL) receives the symbolic dims the inputs bind, {"N": 8}, to
 * free with vigil_string_release. */
VIGIL_EXPORT vigil_status* vigil_session_check(const vigil_session* session, const vigil_tensor* inputs,
                                               size_t input_count, char** bound_dims_json);

/* The memory plan for these inputs as JSON (validates them first):
 * {"arena_bytes", "peak_live_bytes", "device_arena_bytes", "device_peak_live_bytes",
 *  "body_arena_bytes", "body_device_arena_bytes", "unplanned_bodies"}; the body_ entries are what
 * control-flow bodies add while they run, "unplanned_bodies" those planned only when they run. */
VIGIL_EXPORT vigil_status* vigil_session_plan_json(const vigil_session* session, const vigil_tensor* inputs,
                                                   size_t input_count, char** json);

/* Runs `runs` times timing every node, as JSON: {"run_ms":[..], "nodes":[{"index",
 * "node", "op", "backend", "ms":[..]}]} in execution order. With the CUDA
 * backend, create the session with enable_profiling for device times. */
VIGIL_EXPORT vigil_status* vigil_session_profile(const vigil_session* session, const vigil_tensor* inputs,
                                                 size_t input_count, int runs, char** json);

/* A buffer for this session's inputs or outputs: device memory of the
 * session's CUDA device (VIGIL_MEMORY_CUDA), or host memory that the
 * session's device copies at full bus speed (page-locked on a GPU;
 * VIGIL_MEMORY_HOST). Contents uninitialised. */
VIGIL_EXPORT vigil_status* vigil_session_allocate(const vigil_session* session, vigil_dtype dtype,
                                                  const int64_t* shape, size_t rank, vigil_memory memory,
                                                  vigil_value** value);
/* Copies src into dst (each host or device memory of this session's device);
 * the byte sizes must be equal. Returns when the copy is done. */
VIGIL_EXPORT vigil_status* vigil_session_copy(const vigil_session* session, const vigil_tensor* src,
                                              const vigil_tensor* dst);

/* Runs the model. Inputs in host memory, or in device memory of the session's
 * CUDA device (read in place). output_names selects outputs (NULL: all, in
 * model order, output_count must then equal vigil_session_output_count).
 * outputs[i] receives a value in host memory, to release with
 * vigil_value_release. On failure every outputs[i] is NULL. */
VIGIL_EXPORT vigil_status* vigil_session_run(const vigil_session* session, const vigil_tensor* inputs,
                                             size_t input_count, const char* const* output_names,
                                             size_t output_count, vigil_value** outputs);

/* ---- IOBinding: inputs and outputs in device memory --------------------------- */

typedef struct vigil_io_binding vigil_io_binding;

VIGIL_EXPORT vigil_status* vigil_io_binding_create(const vigil_session* session, vigil_io_binding** binding);
VIGIL_EXPORT void vigil_io_binding_release(vigil_io_binding* binding);
/* Binds (or rebinds) the named input to a caller's buffer, host or device.
 * The buffer must stay valid until the run that uses it returns. */
VIGIL_EXPORT vigil_status* vigil_io_binding_bind_input(vigil_io_binding* binding, const vigil_tensor* tensor);
/* Binds the named output to a caller's buffer (host or device): the run
 * writes it there. Its dtype, shape and byte size are checked against the
 * output the run produces. */
VIGIL_EXPORT vigil_status* vigil_io_binding_bind_output(vigil_io_binding* binding, const vigil_tensor* tensor);
/* Binds the named output to memory vigil allocates, on the device (memory
 * VIGIL_MEMORY_CUDA: no copy to the host) or the host. */
VIGIL_EXPORT vigil_status* vigil_io_binding_bind_output_to(vigil_io_binding* binding, const char* name,
                                                           vigil_memory memory);
VIGIL_EXPORT void vigil_io_binding_clear(vigil_io_binding* binding);

/* Runs with the bound inputs and outputs. cuda_stream (a cudaStream_t, or
 * NULL): the run starts after the work already queued on that stream (which
 * may be producing the inputs) and work queued on it afterwards sees the
 * outputs; the call returns once the outputs are ready. */
VIGIL_EXPORT vigil_status* vigil_session_run_with_binding(const vigil_session* session, vigil_io_binding* binding,
                                                          void* cuda_stream);
/* The outputs of the last run, in binding order: outputs bound with
 * vigil_io_binding_bind_output_to are new values (device or host), those bound
 * to caller buffers are views of them. Each value must be released. */
VIGIL_EXPORT size_t vigil_io_binding_output_count(const vigil_io_binding* binding);
VIGIL_EXPORT vigil_status* vigil_io_binding_get_output(const vigil_io_binding* binding, size_t index,
                                                       vigil_value** value);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* VIGIL_VIGIL_H_ */

// nvrtc.cc is the emulator's NVRTC: it compiles a CUDA C++ kernel source
// for the host with g++ into a shared library, which cuModuleLoadData
// (driver.cc) loads. Before compiling, three rewrites make device-only
// constructs host C++ (everything else is kernel.h, force-included):
//
//   extern __shared__ T name[];      T* name = the launch's dynamic buffer
//   asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
//                                    h = __emu_ptx_cvt_rn_f16_f32(f);
//                                    (one output, one input; each PTX
//                                    instruction needs a host function in
//                                    kernel.h, else the compile fails)
//   extern "C" __global__ void k(…)  also an exported trampoline
//                                    __emu_entry_k(void** params)
//
// The "CUBIN" (and "PTX") of a program is a ModuleHeader followed by the
// library's bytes. The compiler is $VITBENCH_CUDA_EMU_CXX, else the one the
// emulator was built with; the flags the emulator was built with
// (EMU_KERNEL_FLAGS: optimization, sanitizers) are added, so kernels and
// emulator agree on AddressSanitizer.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef EMU_KERNEL_FLAGS
#define EMU_KERNEL_FLAGS "-O2"
#endif
#ifndef EMU_CXX
#define EMU_CXX "g++"
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

extern char** environ;

namespace {

enum : int {
  kOK = 0,
  kOutOfMemory = 1,
  kInvalidInput = 3,
  kInvalidProgram = 4,
  kInvalidOption = 5,
  kCompilation = 6,
  kInternal = 11,
};

struct Program {
  std::string source, name, log;
  std::string image;  // ModuleHeader + library bytes, after a compile
};

struct ModuleHeader {
  char magic[16];
  uint64_t size;
};

// here is the folder of this library: kernel.h lies beside it.
std::string here() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&here), &info) == 0 || !info.dli_fname) return ".";
  std::string p = info.dli_fname;
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// The PTX instructions kernel.h has host functions for.
const std::set<std::string> kPTX = {"cvt.rn.f16.f32", "cvt.f32.f16"};

// rewrite applies the three rewrites to src, or returns false with the
// reason in *log.
bool rewrite(const std::string& src, std::string* out, std::string* log) {
  static const std::regex dyn(
      R"re(extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:]*(?:\s+[A-Za-z_][\w:]*)*)\s+([A-Za-z_]\w*)\s*\[\s*\]\s*;)re");
  std::string s = std::regex_replace(src, dyn, "$1* $2 = ($1*)__emu_cur->block->dynamic_shared;");

  static const std::regex asm1(
      R"re(asm\s*(?:volatile\s*)?\(\s*"([^"]*)"\s*:\s*"=\w"\s*\(\s*([^()]+?)\s*\)\s*:\s*"\w"\s*\(\s*([^()]+?)\s*\)\s*\)\s*;)re");
  std::string r;
  auto begin = std::sregex_iterator(s.begin(), s.end(), asm1);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    std::string ins = m[1].str();
    std::string mnemonic = ins.substr(0, ins.find_first_of(" \t;"));
    if (!kPTX.count(mnemonic)) {
      *log += "error: inline PTX \"" + ins + "\" has no host version in the CUDA emulator (kernel.h)\n";
      return false;
    }
    std::string fn = "__emu_ptx_" + mnemonic;
    for (char& c : fn)
      if (c == '.') c = '_';
    r += s.substr(last, (size_t)m.position(0) - last);
    r += m[2].str() + " = " + fn + "(" + m[3].str() + ");";
    last = (size_t)(m.position(0) + m.length(0));
  }
  r += s.substr(last);
  static const std::regex leftover(R"re(\basm\s*(volatile\s*)?\()re");
  std::smatch m;
  if (std::regex_search(r, m, leftover)) {
    size_t line = 1 + (size_t)std::count(r.begin(), r.begin() + m.position(0), '\n');
    *log += "error: inline asm at line " + std::to_string(line) +
            " of the rewritten source is not one output and one input: the CUDA emulator cannot run it\n";
    return false;
  }

  static const std::regex kernel(
      R"re(extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+([A-Za-z_]\w*)\s*\()re");
  std::string entries = "\n#line 1 \"<cuda-emu entry points>\"\n";
  int n = 0;
  for (auto it = std::sregex_iterator(r.begin(), r.end(), kernel); it != std::sregex_iterator(); ++it) {
    std::string k = (*it)[1].str();
    entries += "extern \"C\" __attribute__((visibility(\"default\"))) void __emu_entry_" + k +
               "(void** p) { __emu_call(" + k + ", p); }\n";
    n++;
  }
  if (n == 0) *log += "warning: no extern \"C\" __global__ kernel in the source\n";
  *out = r + entries;
  return true;
}

// known_option reports whether NVRTC accepts opt (the emulator ignores
// what it cannot emulate: the architecture, line info, ptxas options).
bool known_option(const std::string& o, std::vector<std::string>* cxx) {
  static const char* prefixes[] = {"--gpu-architecture=", "-arch=", "--std=", "-std=", "--ptxas-options=",
                                   "--maxrregcount=", "--fmad=", "-fmad=", "--ftz=", "-ftz=", "--prec-div=",
                                   "-prec-div=", "--prec-sqrt=", "-prec-sqrt=", "--relocatable-device-code="};
  static const char* exact[] = {"-default-device", "--device-as-default-execution-space", "-lineinfo",
                                "--generate-line-info", "-G", "--device-debug", "-use_fast_math",
                                "--use_fast_math", "-dw", "-w", "--disable-warnings"};
  for (const char* p : prefixes)
    if (o.rfind(p, 0) == 0) return true;
  for (const char* e : exact)
    if (o == e) return true;
  if (o.rfind("-D", 0) == 0 || o.rfind("-U", 0) == 0 || o.rfind("-I", 0) == 0) {
    cxx->push_back(o);
    return true;
  }
  return false;
}

// split_flags splits a flag string at spaces.
std::vector<std::string> split_flags(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// run_compiler runs argv with its output in log_path and returns its exit
// status (or -1 when it could not start).
int run_compiler(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // The compiler runs without the sanitizer runtime a sanitized emulator
  // had preloaded into this process.
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

void remove_tree(const std::string& dir, const std::vector<std::string>& files) {
  for (const std::string& f : files) unlink((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

int compile(Program* p, int n, const char* const* options) {
  std::vector<std::string> extra;
  for (int i = 0; i < n; ++i) {
    if (!options[i]) return kInvalidOption;
    if (!known_option(options[i], &extra)) {
      p->log += std::string("nvrtc: error: unrecognized option ") + options[i] + "\n";
      return kInvalidOption;
    }
  }
  std::string src;
  if (!rewrite(p->source, &src, &p->log)) return kCompilation;
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/vitbench-cuemu-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) {
    p->log += "nvrtc: cannot make a temporary directory\n";
    return kInternal;
  }
  std::string dir = buf.data();
  {
    std::ofstream f(dir + "/kernel.cc", std::ios::binary);
    f << src;
    if (!f) {
      remove_tree(dir, {"kernel.cc"});
      return kInternal;
    }
  }
  const char* env_cxx = std::getenv("VITBENCH_CUDA_EMU_CXX");
  std::vector<std::string> argv = {env_cxx && *env_cxx ? env_cxx : EMU_CXX,
                                   "-x",
                                   "c++",
                                   "-std=c++17",
                                   "-fPIC",
                                   "-shared",
                                   "-fvisibility=hidden",
                                   "-ffp-contract=off",
                                   "-fno-fast-math",
                                   "-include",
                                   here() + "/kernel.h"};
  for (const std::string& f : split_flags(EMU_KERNEL_FLAGS)) argv.push_back(f);
  for (const std::string& f : extra) argv.push_back(f);
  argv.insert(argv.end(), {"-o", dir + "/kernel.so", dir + "/kernel.cc"});
  int rc = run_compiler(argv, dir + "/log.txt");
  std::string log;
  read_file(dir + "/log.txt", &log);
  // Name the source the caller gave, not the temporary file.
  for (size_t at; (at = log.find(dir + "/kernel.cc")) != std::string::npos;)
    log.replace(at, dir.size() + 10, p->name);
  p->log += log;
  std::string lib;
  if (rc != 0 || !read_file(dir + "/kernel.so", &lib) || lib.empty()) {
    if (rc == -1) p->log += "nvrtc: cannot run the host compiler " + argv[0] + "\n";
    remove_tree(dir, {"kernel.cc", "kernel.so", "log.txt"});
    return kCompilation;
  }
  remove_tree(dir, {"kernel.cc", "kernel.so", "log.txt"});
  ModuleHeader h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, "vitbench-cuemu1", 16);
  h.size = lib.size();
  p->image.assign(reinterpret_cast<const char*>(&h), sizeof h);
  p->image += lib;
  return kOK;
}

}  // namespace

EXPORT int nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return kInvalidInput;
  *major = 12;
  *minor = 4;
  return kOK;
}

EXPORT const char* nvrtcGetErrorString(int code) {
  switch (code) {
    case 0: return "NVRTC_SUCCESS";
    case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "NVRTC_ERROR_INVALID_INPUT";
    case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
    case 5: return "NVRTC_ERROR_INVALID_OPTION";
    case 6: return "NVRTC_ERROR_COMPILATION";
    case 7: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 11: return "NVRTC_ERROR_INTERNAL_ERROR";
  }
  return "NVRTC_ERROR unknown";
}

EXPORT int nvrtcCreateProgram(Program** prog, const char* src, const char* name, int num_headers, const char**,
                              const char**) {
  if (!prog || !src) return kInvalidInput;
  if (num_headers != 0) return kInvalidInput;  // the backend embeds no headers
  *prog = new Program{src, name ? name : "default_program", "", ""};
  return kOK;
}

EXPORT int nvrtcCompileProgram(Program* prog, int n, const char* const* options) {
  if (!prog) return kInvalidProgram;
  prog->image.clear();
  return compile(prog, n, options);
}

EXPORT int nvrtcGetProgramLogSize(Program* prog, size_t* size) {
  if (!prog || !size) return kInvalidInput;
  *size = prog->log.size() + 1;
  return kOK;
}

EXPORT int nvrtcGetProgramLog(Program* prog, char* log) {
  if (!prog || !log) return kInvalidInput;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return kOK;
}

namespace {
int code_size(Program* prog, size_t* size) {
  if (!prog || !size) return kInvalidInput;
  if (prog->image.empty()) return kInvalidProgram;
  *size = prog->image.size();
  return kOK;
}
int code(Program* prog, char* out) {
  if (!prog || !out) return kInvalidInput;
  if (prog->image.empty()) return kInvalidProgram;
  std::memcpy(out, prog->image.data(), prog->image.size());
  return kOK;
}
}  // namespace

EXPORT int nvrtcGetPTXSize(Program* prog, size_t* size) { return code_size(prog, size); }
EXPORT int nvrtcGetPTX(Program* prog, char* out) { return code(prog, out); }
EXPORT int nvrtcGetCUBINSize(Program* prog, size_t* size) { return code_size(prog, size); }
EXPORT int nvrtcGetCUBIN(Program* prog, char* out) { return code(prog, out); }

EXPORT int nvrtcDestroyProgram(Program** prog) {
  if (!prog) return kInvalidInput;
  delete *prog;
  *prog = nullptr;
  return kOK;
}

// The architectures the emulated NVRTC "supports": the emulated device's
// sm_90 and sm_80, so the backend asks for a CUBIN of the device's own.
EXPORT int nvrtcGetNumSupportedArchs(int* n) {
  if (!n) return kInvalidInput;
  *n = 2;
  return kOK;
}

EXPORT int nvrtcGetSupportedArchs(int* archs) {
  if (!archs) return kInvalidInput;
  archs[0] = 80;
  archs[1] = 90;
  return kOK;
}

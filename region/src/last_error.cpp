#include "last_error.hpp"

#include <cstdarg>
#include <cstdio>

namespace manyalloc::region::detail {

namespace {
thread_local LastError t_error;
}  // namespace

LastError save_last_error() { return t_error; }
void restore_last_error(const LastError& saved) { t_error = saved; }

mr_status fail(mr_status s, const char* fmt, ...) {
  LastError& e = t_error;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(e.text, sizeof e.text, fmt, ap);
  va_end(ap);
  e.explained = true;
  return s;
}

void note_plain(const char* call, mr_status s) {
  LastError& e = t_error;
  if (!e.explained) std::snprintf(e.text, sizeof e.text, "%s: %s", call, mr_strerror(s));
  e.explained = false;
}

}  // namespace manyalloc::region::detail

extern "C" {

const char* mr_last_error(void) { return manyalloc::region::detail::t_error.text; }

const char* mr_strerror(mr_status s) {
  switch (s) {
    case MR_OK: return "ok";
    case MR_ERR_NO_REGION: return "no such region";
    case MR_ERR_INVALID_POINTER: return "not the start of a live object";
    case MR_ERR_NO_MEMORY: return "global address space exhausted";
    case MR_ERR_BAD_ARGUMENT: return "bad argument";
    case MR_ERR_NOT_WORKER: return "call made on a scheduler rank";
    case MR_ERR_INIT: return "initialisation failed (mr_last_error says why)";
    case MR_ERR_TRUNCATED: return "more regions or objects received than room given";
    case MR_ERR_NOT_INITIALIZED: return "library not initialised (before mr_init, after a failed mr_init or after mr_finalize)";
    case MR_ERR_THREAD: return "call from a thread other than the one that called mr_init";
    case MR_ERR_BAD_REQUEST: return "not a pending request (MR_REQUEST_NULL, never issued, or already completed)";
    case MR_ERR_PEER_FAILED: return "a rank this call needs has died or exited";
  }
  return "unknown status";
}

}  // extern "C"

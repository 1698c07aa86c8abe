// mr_last_error: why the last failing call of a thread failed (region.h).
// Each API call that can fail returns through finish(); a call that knows
// more than the status code says records it with fail() first. A call that
// succeeds leaves the last error as it was (save_last_error around its
// own internal requests, below).
#pragma once

#include "manyalloc/region/region.h"

namespace manyalloc::region::detail {

struct LastError {
  char text[640] = "";
  bool explained = false;  // fail() ran since the last finish() of an error
};

// A request a call makes for itself, whose failure is not the call's own
// (mr_rfree's pack for the pages it drops): the call saves the last error
// before it and restores it after, so that a call that then succeeds leaves
// the last error as it found it (region.h, mr_last_error).
LastError save_last_error();
void restore_last_error(const LastError& saved);

// Records "<printf format>" as this thread's last error; returns s.
mr_status fail(mr_status s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// For a failing status without a recorded reason: "<call>: <mr_strerror>".
void note_plain(const char* call, mr_status s);

// The end of every API call: returns s; when it is an error that fail()
// did not explain during this call, the last error says at least which call
// failed and mr_strerror's text.
inline mr_status finish(const char* call, mr_status s) {
  if (s != MR_OK) note_plain(call, s);
  return s;
}

}  // namespace manyalloc::region::detail

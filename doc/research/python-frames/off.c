#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_code.h"
#else
#include <frameobject.h>
#endif
#define P(name, expr) printf("%-45s %zu\n", name, (size_t)(expr))
int main(void){
  printf("PY_VERSION %s hex=0x%08x\n", PY_VERSION, PY_VERSION_HEX);
  P("sizeof(PyThreadState)", sizeof(PyThreadState));
  P("tstate.prev", offsetof(PyThreadState, prev));
  P("tstate.next", offsetof(PyThreadState, next));
  P("tstate.interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX < 0x030B0000
  P("tstate.frame", offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030D0000
  P("tstate.cframe", offsetof(PyThreadState, cframe));
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
  P("cframe.previous", offsetof(_PyCFrame, previous));
  P("tstate.root_cframe", offsetof(PyThreadState, root_cframe));
#endif
#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030B0000
  P("cframe.use_tracing", offsetof(CFrame, use_tracing));
  P("cframe.previous", offsetof(CFrame, previous));
#endif
#if PY_VERSION_HEX >= 0x030D0000
  P("tstate.current_frame", offsetof(PyThreadState, current_frame));
#endif
  P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
  P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX < 0x030B0000
  P("sizeof(PyFrameObject)", sizeof(PyFrameObject));
  P("frame.ob_type", offsetof(PyFrameObject, ob_base.ob_base.ob_type));
  P("frame.f_back", offsetof(PyFrameObject, f_back));
  P("frame.f_code", offsetof(PyFrameObject, f_code));
  P("frame.f_lasti", offsetof(PyFrameObject, f_lasti));
  P("frame.f_lineno", offsetof(PyFrameObject, f_lineno));
#else
  P("sizeof(_PyInterpreterFrame)", sizeof(_PyInterpreterFrame));
#if PY_VERSION_HEX >= 0x030D0000
  P("iframe.f_executable", offsetof(_PyInterpreterFrame, f_executable));
  P("iframe.instr_ptr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  P("iframe.f_code", offsetof(_PyInterpreterFrame, f_code));
  P("iframe.prev_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  P("iframe.previous", offsetof(_PyInterpreterFrame, previous));
  P("iframe.frame_obj", offsetof(_PyInterpreterFrame, frame_obj));
#if PY_VERSION_HEX < 0x030C0000
  P("iframe.is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
  P("iframe.owner", offsetof(_PyInterpreterFrame, owner));
  P("iframe.localsplus", offsetof(_PyInterpreterFrame, localsplus));
#endif
  P("sizeof(PyCodeObject)", sizeof(PyCodeObject));
  P("code.ob_type", offsetof(PyObject, ob_type));
  P("code.co_firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("code.co_filename", offsetof(PyCodeObject, co_filename));
  P("code.co_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
  P("code.co_qualname", offsetof(PyCodeObject, co_qualname));
  P("code.co_linetable", offsetof(PyCodeObject, co_linetable));
  P("code.co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
  P("code._co_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
  P("code.ob_size(Py_SIZE)", offsetof(PyVarObject, ob_size));
#else
  P("code.co_code", offsetof(PyCodeObject, co_code));
#if PY_VERSION_HEX >= 0x030A0000
  P("code.co_linetable", offsetof(PyCodeObject, co_linetable));
#else
  P("code.co_lnotab", offsetof(PyCodeObject, co_lnotab));
#endif
#endif
  P("bytes.ob_sval", offsetof(PyBytesObject, ob_sval));
  P("sizeof(PyASCIIObject)", sizeof(PyASCIIObject));
  P("sizeof(PyCompactUnicodeObject)", sizeof(PyCompactUnicodeObject));
  P("ascii.length", offsetof(PyASCIIObject, length));
  P("ascii.state", offsetof(PyASCIIObject, state));
#if PY_VERSION_HEX >= 0x030D0000
  P("_PyRuntime.debug_offsets", offsetof(_PyRuntimeState, debug_offsets));
  P("sizeof(_Py_DebugOffsets)", sizeof(_Py_DebugOffsets));
  P("dbg.thread_state.current_frame(field pos)", offsetof(_Py_DebugOffsets, thread_state.current_frame));
  P("dbg.interpreter_frame.previous(field pos)", offsetof(_Py_DebugOffsets, interpreter_frame.previous));
  P("dbg.interpreter_frame.executable(field pos)", offsetof(_Py_DebugOffsets, interpreter_frame.executable));
  P("dbg.interpreter_frame.instr_ptr(field pos)", offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
  P("dbg.interpreter_frame.owner(field pos)", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
  P("dbg.code_object.filename(field pos)", offsetof(_Py_DebugOffsets, code_object.filename));
  P("dbg.code_object.co_code_adaptive(field pos)", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
#endif
  return 0;
}

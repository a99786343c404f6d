package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// ErrorCode is a PJRT error code; the values follow absl status codes.
type ErrorCode int

// Error codes reported by PJRT plugins.
const (
	CodeOK                 ErrorCode = 0
	CodeCancelled          ErrorCode = 1
	CodeUnknown            ErrorCode = 2
	CodeInvalidArgument    ErrorCode = 3
	CodeDeadlineExceeded   ErrorCode = 4
	CodeNotFound           ErrorCode = 5
	CodeAlreadyExists      ErrorCode = 6
	CodePermissionDenied   ErrorCode = 7
	CodeResourceExhausted  ErrorCode = 8
	CodeFailedPrecondition ErrorCode = 9
	CodeAborted            ErrorCode = 10
	CodeOutOfRange         ErrorCode = 11
	CodeUnimplemented      ErrorCode = 12
	CodeInternal           ErrorCode = 13
	CodeUnavailable        ErrorCode = 14
	CodeDataLoss           ErrorCode = 15
	CodeUnauthenticated    ErrorCode = 16
)

var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// String returns the upper-case name of the code, e.g. "INVALID_ARGUMENT".
func (c ErrorCode) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", int(c))
}

// Error is an error reported by a PJRT plugin.
type Error struct {
	// Op names the operation that failed, e.g. "compile".
	Op string
	// Code is the plugin's error code.
	Code ErrorCode
	// Message is the plugin's message, verbatim.
	Message string
}

// Error formats the error as "pjrt: <op>: <CODE>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("pjrt: %s: %s: %s", e.Op, e.Code, e.Message)
}

// check turns a PJRT_Error into an *Error and destroys it; nil stays nil.
func (p *Plugin) check(op string, perr *C.PJRT_Error) error {
	if perr == nil {
		return nil
	}
	var msg *C.char
	var n C.size_t
	var code C.int
	C.tt_error_take(p.api, perr, &msg, &n, &code)
	e := &Error{Op: op, Code: ErrorCode(code)}
	if msg != nil {
		e.Message = C.GoStringN(msg, C.int(n))
		C.free(unsafe.Pointer(msg))
	}
	return e
}

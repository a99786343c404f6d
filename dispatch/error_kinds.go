package dispatch

import (
	"errors"
	"fmt"
)

// ErrorKind is the Python exception class an error raises, as PyTorch's own
// kernels choose it (TORCH_CHECK_INDEX, TORCH_CHECK_VALUE, ...).
type ErrorKind int

// Error kinds; the values match the TTPU_*_ERROR status codes' order in bridge/torchtpu.h.
const (
	RuntimeErr ErrorKind = iota
	IndexErr
	ValueErr
	TypeErr
	NotImplementedErr
)

// KindedError is a rule error that raises an exception class other than RuntimeError.
type KindedError struct {
	Kind ErrorKind
	Msg  string
}

// Error returns the message.
func (e *KindedError) Error() string { return e.Msg }

// IndexErrorf builds an error that raises IndexError, as CPU does for
// dimensions and indices out of range.
func IndexErrorf(format string, args ...any) error {
	return &KindedError{IndexErr, fmt.Sprintf(format, args...)}
}

// ValueErrorf builds an error that raises ValueError.
func ValueErrorf(format string, args ...any) error {
	return &KindedError{ValueErr, fmt.Sprintf(format, args...)}
}

// TypeErrorf builds an error that raises TypeError.
func TypeErrorf(format string, args ...any) error {
	return &KindedError{TypeErr, fmt.Sprintf(format, args...)}
}

// NotImplementedErrorf builds an error that raises NotImplementedError, as
// CPU's TORCH_CHECK_NOT_IMPLEMENTED does.
func NotImplementedErrorf(format string, args ...any) error {
	return &KindedError{NotImplementedErr, fmt.Sprintf(format, args...)}
}

// KindOf returns the exception class err raises: RuntimeErr unless err wraps a KindedError.
func KindOf(err error) ErrorKind {
	var k *KindedError
	if errors.As(err, &k) {
		return k.Kind
	}
	return RuntimeErr
}

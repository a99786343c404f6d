package pjrt

/*
#include "capi.h"
*/
import "C"

import "fmt"

// DType is an element type; its values equal PJRT_Buffer_Type.
type DType int32

// Element types, with the values of PJRT_Buffer_Type.
const (
	Invalid       DType = C.PJRT_Buffer_Type_INVALID
	PRED          DType = C.PJRT_Buffer_Type_PRED
	S8            DType = C.PJRT_Buffer_Type_S8
	S16           DType = C.PJRT_Buffer_Type_S16
	S32           DType = C.PJRT_Buffer_Type_S32
	S64           DType = C.PJRT_Buffer_Type_S64
	U8            DType = C.PJRT_Buffer_Type_U8
	U16           DType = C.PJRT_Buffer_Type_U16
	U32           DType = C.PJRT_Buffer_Type_U32
	U64           DType = C.PJRT_Buffer_Type_U64
	F16           DType = C.PJRT_Buffer_Type_F16
	F32           DType = C.PJRT_Buffer_Type_F32
	F64           DType = C.PJRT_Buffer_Type_F64
	BF16          DType = C.PJRT_Buffer_Type_BF16
	C64           DType = C.PJRT_Buffer_Type_C64
	C128          DType = C.PJRT_Buffer_Type_C128
	F8E5M2        DType = C.PJRT_Buffer_Type_F8E5M2
	F8E4M3FN      DType = C.PJRT_Buffer_Type_F8E4M3FN
	F8E4M3B11FNUZ DType = C.PJRT_Buffer_Type_F8E4M3B11FNUZ
	F8E5M2FNUZ    DType = C.PJRT_Buffer_Type_F8E5M2FNUZ
	F8E4M3FNUZ    DType = C.PJRT_Buffer_Type_F8E4M3FNUZ
	S4            DType = C.PJRT_Buffer_Type_S4
	U4            DType = C.PJRT_Buffer_Type_U4
	Token         DType = C.PJRT_Buffer_Type_TOKEN
	S2            DType = C.PJRT_Buffer_Type_S2
	U2            DType = C.PJRT_Buffer_Type_U2
	F8E4M3        DType = C.PJRT_Buffer_Type_F8E4M3
	F8E3M4        DType = C.PJRT_Buffer_Type_F8E3M4
	F8E8M0FNU     DType = C.PJRT_Buffer_Type_F8E8M0FNU
	F4E2M1FN      DType = C.PJRT_Buffer_Type_F4E2M1FN
)

var dtypeInfo = map[DType]struct {
	name string
	size int
}{
	Invalid: {"invalid", 0}, PRED: {"pred", 1},
	S8: {"s8", 1}, S16: {"s16", 2}, S32: {"s32", 4}, S64: {"s64", 8},
	U8: {"u8", 1}, U16: {"u16", 2}, U32: {"u32", 4}, U64: {"u64", 8},
	F16: {"f16", 2}, F32: {"f32", 4}, F64: {"f64", 8}, BF16: {"bf16", 2},
	C64: {"c64", 8}, C128: {"c128", 16},
	F8E5M2: {"f8e5m2", 1}, F8E4M3FN: {"f8e4m3fn", 1},
	F8E4M3B11FNUZ: {"f8e4m3b11fnuz", 1}, F8E5M2FNUZ: {"f8e5m2fnuz", 1},
	F8E4M3FNUZ: {"f8e4m3fnuz", 1}, F8E4M3: {"f8e4m3", 1}, F8E3M4: {"f8e3m4", 1},
	F8E8M0FNU: {"f8e8m0fnu", 1},
	S4:        {"s4", 1}, U4: {"u4", 1}, S2: {"s2", 1}, U2: {"u2", 1},
	F4E2M1FN: {"f4e2m1fn", 1}, Token: {"token", 0},
}

// Size returns the number of bytes one element occupies in a dense host
// buffer. Sub-byte types (s4, u4, s2, u2, f4e2m1fn) report 1 (one element per
// byte, unpacked); token and invalid report 0.
func (d DType) Size() int { return dtypeInfo[d].size }

// String returns the StableHLO-style lower-case name, e.g. "f32", "bf16",
// "pred", or "dtype(N)" for an unknown value.
func (d DType) String() string {
	if i, ok := dtypeInfo[d]; ok {
		return i.name
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

package hlo

// Conversions between float32 and the float8 types, spelled in integer ops
// so that every bit pattern comes out as PyTorch's (c10) conversions give
// it, whatever the backend's own convert does with overflow, NaNs and the
// fnuz types' zero (Float8Bits is the same rounding on the host).

// Float8FromF32 rounds the f32 tensor v to the float8 type e, as
// Float8Format.FromFloat32 does element by element.
func (b *Builder) Float8FromF32(v *Value, e Elem) *Value {
	return b.BitcastConvert(b.float8Bits(v, e), e)
}

// float8Bits is Float8FromF32 with the patterns as ui8. The float8 values
// themselves are only bitcast: XLA's CPU backend computes float8 selects and
// concatenations in a wider type, which loses NaN signs and payloads.
func (b *Builder) float8Bits(v *Value, e Elem) *Value {
	f, ok := float8Formats[e]
	if !(ok && v.T.Elem == F32) {
		failf("Float8FromF32: %v to %s", v.T, e)
	}
	shape := v.T.Shape
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), shape) }
	cmp := func(dir string, x, y *Value) *Value { return b.Compare(dir, x, y) }
	x := b.BitcastConvert(v, U32)
	sign := b.And(b.ShiftRightLogical(x, k(24)), k(0x80))
	abs := b.And(x, k(0x7fffffff))
	biased := b.ShiftRightLogical(abs, k(23)) // exponent + 127
	mant := b.Or(b.And(abs, k(0x7fffff)), k(0x800000))
	// minBiased is the float32 biased exponent of the smallest normal float8.
	minBiased := int64(127 + 1 - f.Bias)
	sub := cmp(LT, biased, k(minBiased))
	normShift := int64(23 - f.Mant)
	// Below the normal range every step down in exponent drops one more bit;
	// 31 bits or more drop all 24 of them.
	subShift := b.Clamp(k(0), b.Sub(k(normShift+minBiased), b.Min(biased, k(minBiased))), k(31))
	shift := b.Select(sub, subShift, k(normShift))
	base := b.Select(sub, k(0), b.ShiftLeft(b.Sub(b.Max(biased, k(minBiased)), k(minBiased)), k(int64(f.Mant))))
	q := b.ShiftRightLogical(mant, shift)
	rem := b.And(mant, b.Sub(b.ShiftLeft(k(1), shift), k(1)))
	half := b.ShiftLeft(k(1), b.Sub(shift, k(1)))
	odd := cmp(EQ, b.And(q, k(1)), k(1))
	up := b.Or(cmp(GT, rem, half), b.And(cmp(EQ, rem, half), odd))
	code := b.Add(b.Add(base, q), b.Select(up, k(1), k(0)))
	over := b.Or(cmp(GT, code, k(int64(f.MaxCode))), cmp(EQ, abs, k(0x7f800000)))
	code = b.Select(over, k(int64(f.overflow())), code)
	code = b.Select(cmp(GT, abs, k(0x7f800000)), k(int64(f.NaN)), code)
	out := b.Or(sign, code)
	if f.FNUZ {
		unsigned := b.Or(cmp(EQ, code, k(0)), cmp(EQ, code, k(0x80)))
		out = b.Select(unsigned, code, out)
	}
	return b.Convert(out, U8)
}

// Float8ToF32 widens the float8 tensor v to f32 exactly; a NaN becomes the
// float32 NaN PyTorch's conversion gives for its pattern.
func (b *Builder) Float8ToF32(v *Value) *Value {
	f, ok := float8Formats[v.T.Elem]
	if !ok {
		failf("Float8ToF32: %v is not float8", v.T)
	}
	shape := v.T.Shape
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), shape) }
	x := b.Convert(b.BitcastConvert(v, U8), U32)
	// NaNs are chosen among bits, never among floats: XLA's CPU backend does
	// not keep a NaN's bits through a select of floats.
	wide := b.BitcastConvert(b.Convert(v, F32), U32)
	var nan *Value
	switch {
	case f.FNUZ:
		// c10 gives the signalling NaN with the lowest payload.
		return b.BitcastConvert(b.Select(b.Compare(EQ, x, k(0x80)), k(0x7f800001), wide), F32)
	case f.Inf != 0:
		// Through float16: the payload moves up and the NaN is made quiet.
		payload := b.ShiftLeft(b.And(x, k(3)), k(21))
		nan = b.Or(b.Or(k(0x7fc00000), payload), b.ShiftLeft(b.And(x, k(0x80)), k(24)))
	default:
		nan = b.Or(k(0x7ff00000), b.ShiftLeft(b.And(x, k(0x80)), k(24)))
	}
	isNaN := b.Compare(GT, b.And(x, k(0x7f)), k(int64(f.nanFloor())))
	return b.BitcastConvert(b.Select(isNaN, nan, wide), F32)
}

// nanFloor returns the largest unsigned pattern below the NaNs of a format
// with signed NaNs: its infinity, or its largest finite value.
func (f Float8Format) nanFloor() uint8 {
	if f.Inf != 0 {
		return f.Inf
	}
	return f.MaxCode
}

// float8_e5m2 has six NaNs: three payloads, two signs. PyTorch's copies keep
// them; its conversions make each 0x7F or 0xFF. The float32 form a device
// computes float8_e5m2 in (Float8Load) keeps the payload p in the low bits of
// a quiet NaN, sign | 0x7FC00000 | p, so values that only move keep it, and
// Float8Store puts it back; Float8CanonicalNaN turns such a NaN into the
// float32 PyTorch's conversion gives. Every other format has one NaN per
// sign, which float32 keeps as it is.

// Float8Load widens the float8 tensor v to the f32 form rules compute in:
// Float8ToF32's values, with float8_e5m2's NaN payloads kept in low bits.
func (b *Builder) Float8Load(v *Value) *Value {
	w := b.Float8ToF32(v)
	if v.T.Elem != F8E5M2 {
		return w
	}
	shape := v.T.Shape
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), shape) }
	x := b.Convert(b.BitcastConvert(v, U8), U32)
	isNaN := b.Compare(GT, b.And(x, k(0x7f)), k(0x7c))
	kept := b.Or(b.Or(k(0x7fc00000), b.And(x, k(3))), b.ShiftLeft(b.And(x, k(0x80)), k(24)))
	return b.BitcastConvert(b.Select(isNaN, kept, b.BitcastConvert(w, U32)), F32)
}

// Float8Store rounds the f32 tensor v to the float8 type e as Float8FromF32
// does, except that a float8_e5m2 NaN payload Float8Load kept comes back.
func (b *Builder) Float8Store(v *Value, e Elem) *Value {
	if e != F8E5M2 {
		return b.Float8FromF32(v, e)
	}
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), v.T.Shape) }
	x, payload, kept := e5m2Kept(b, v)
	back := b.Or(b.Or(b.ShiftRightLogical(b.And(x, k(0x80000000)), k(24)), k(0x7c)), payload)
	return b.BitcastConvert(b.Select(kept, b.Convert(back, U8), b.float8Bits(v, e)), e)
}

// Float8CanonicalNaN returns the f32 tensor v with each float8_e5m2 NaN
// payload Float8Load kept replaced by the float32 NaN PyTorch's conversion
// of that float8 pattern gives (Float8ToF32's).
func (b *Builder) Float8CanonicalNaN(v *Value) *Value {
	x, payload, kept := e5m2Kept(b, v)
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), v.T.Shape) }
	canon := b.Or(b.And(x, k(0x80000000)), b.Or(k(0x7fc00000), b.ShiftLeft(payload, k(21))))
	return b.BitcastConvert(b.Select(kept, canon, x), F32)
}

// e5m2Kept returns the bits of the f32 tensor v, the low payload bits, and
// where v holds a float8_e5m2 NaN payload Float8Load kept.
func e5m2Kept(b *Builder, v *Value) (x, payload, kept *Value) {
	if v.T.Elem != F32 {
		failf("float8_e5m2 NaN payloads live in f32, not %v", v.T)
	}
	k := func(c int64) *Value { return b.BroadcastTo(b.ConstantInt(T(U32), c), v.T.Shape) }
	x = b.BitcastConvert(v, U32)
	abs := b.And(x, k(0x7fffffff))
	kept = b.And(b.Compare(GT, abs, k(0x7fc00000)), b.Compare(LE, abs, k(0x7fc00003)))
	return x, b.And(x, k(3)), kept
}

package pjrt

// Field numbers of xla.CompileOptionsProto and xla.ExecutableBuildOptionsProto
// used below.
const (
	compileOptsBuildOptions = 3 // executable_build_options (message)
	compileOptsPortable     = 4 // compile_portable_executable (bool)
	buildOptsDeviceOrdinal  = 1 // device_ordinal (int64)
	buildOptsNumReplicas    = 4 // num_replicas (int64)
	buildOptsNumPartitions  = 5 // num_partitions (int64)
)

// appendVarint appends v in protobuf base-128 varint encoding.
func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendVarintField appends a varint-typed field (wire type 0).
func appendVarintField(b []byte, field int, v uint64) []byte {
	return appendVarint(appendVarint(b, uint64(field)<<3), v)
}

// appendBytesField appends a length-delimited field (wire type 2).
func appendBytesField(b []byte, field int, v []byte) []byte {
	b = appendVarint(b, uint64(field)<<3|2)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// CompileOptions returns a serialized xla.CompileOptionsProto for one
// replica and one partition with no device ordinal fixed (-1). When portable
// is true the executable is compiled without a device assignment, so that
// Execute can run it on any addressable device.
func CompileOptions(portable bool) []byte {
	var build []byte
	build = appendVarintField(build, buildOptsDeviceOrdinal, ^uint64(0)) // -1
	build = appendVarintField(build, buildOptsNumReplicas, 1)
	build = appendVarintField(build, buildOptsNumPartitions, 1)
	var opts []byte
	opts = appendBytesField(opts, compileOptsBuildOptions, build)
	if portable {
		opts = appendVarintField(opts, compileOptsPortable, 1)
	}
	return opts
}

// DefaultCompileOptions returns the serialized xla.CompileOptionsProto used
// when Compile is given nil options: one replica, one partition, not
// portable (the executable runs on the client's default device assignment,
// device 0).
func DefaultCompileOptions() []byte { return CompileOptions(false) }

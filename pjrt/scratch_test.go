package pjrt

import "testing"

func TestScratch(t *testing.T) {
	c := newClient(t, ClientOptions{CPUDeviceCount: 2})
	x := compile(t, c, addModule, nil)
	t.Logf("default devices %v", x.Devices())
	xp := compile(t, c, addModule, CompileOptions(true))
	t.Logf("portable devices %v", xp.Devices())
	var build []byte
	build = appendVarintField(build, buildOptsNumReplicas, 2)
	build = appendVarintField(build, buildOptsNumPartitions, 1)
	opts := appendBytesField(nil, compileOptsBuildOptions, build)
	x2, err := c.Compile(addModule, opts)
	if err == nil {
		t.Logf("2 replicas devices %v", x2.Devices())
	} else {
		t.Logf("2 replicas err %v", err)
	}
	x3, err := c.Compile(addModule, []byte{})
	if err == nil {
		t.Logf("empty opts devices %v", x3.Devices())
	} else {
		t.Logf("empty opts err %v", err)
	}
	ba := upload(t, c, f32Bytes([]float32{1, 2, 3, 4, 5, 6}), F32, []int64{2, 3}, 1)
	outs, ev, err := x.Execute([]*Buffer{ba, ba}, 1)
	t.Logf("non-portable on dev1: %v", err)
	if err == nil {
		t.Logf("await %v dev %d", ev.Await(), outs[0].Device())
	}
	outs, ev, err = xp.Execute([]*Buffer{ba, ba}, 0)
	t.Logf("portable on dev0 with arg on dev1: %v", err)
	if err == nil {
		t.Logf("await %v dev %d", ev.Await(), outs[0].Device())
	}
}

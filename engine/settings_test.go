package engine

import (
	"testing"

	"torchtpu/internal/testplugin"
)

// TestReadSettingsFollowsTheEnvironmentUntilInit checks that ReadSettings
// takes a setting the environment gained after New, and that once Init has
// succeeded it leaves what the API set alone.
func TestReadSettingsFollowsTheEnvironmentUntilInit(t *testing.T) {
	t.Setenv("TORCHTPU_MODE", "")
	t.Setenv("TORCHTPU_STEP_REPLAY", "")
	e := New()
	if e.Mode() != ModeStrict || e.noStepTape {
		t.Fatalf("New: mode %v, step replay off %v", e.Mode(), e.noStepTape)
	}
	t.Setenv("TORCHTPU_MODE", "fused")
	t.Setenv("TORCHTPU_STEP_REPLAY", "0")
	e.ReadSettings()
	if e.Mode() != ModeFused || !e.noStepTape {
		t.Fatalf("ReadSettings before Init: mode %v, step replay off %v", e.Mode(), e.noStepTape)
	}
	if err := e.Init(testplugin.Path(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.SetMode(ModeDebug); err != nil {
		t.Fatal(err)
	}
	e.ReadSettings()
	if e.Mode() != ModeDebug {
		t.Fatalf("ReadSettings after Init changed the mode the API set to %v", e.Mode())
	}
}

package dispatch

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite OPS.md from the table")

// opIndex renders the table as OPS.md: every name with its variant, the
// functional rule it runs and where it was registered.
func opIndex() string {
	var b strings.Builder
	b.WriteString("# The op table\n\n")
	b.WriteString("Generated from the registrations in this folder by `go test ./dispatch -run TestOpIndex -update`; DO NOT EDIT.\n")
	b.WriteString("A test keeps it true. Variants: `functional` runs the rule, `in-place` writes result 0 into `self`,\n")
	b.WriteString("`out=` writes the results into the trailing out arguments.\n\n")
	b.WriteString("| op | variant | rule | registered at |\n|---|---|---|---|\n")
	variant := map[Variant]string{Functional: "functional", Inplace: "in-place", OutVariant: "out="}
	for _, n := range Names() {
		e := table[n]
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", n, variant[e.Variant], e.Rule.Name, e.Site)
	}
	return b.String()
}

func TestOpIndexIsCurrent(t *testing.T) {
	want := opIndex()
	if *update {
		if err := os.WriteFile("OPS.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("OPS.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("dispatch/OPS.md is stale: run `go test ./dispatch -run TestOpIndex -update`")
	}
}

// TestTableNamesAreATenOps checks that every name in the table, derived or
// given, is an operator of the torch in gen_aten_names.go.
func TestTableNamesAreATenOps(t *testing.T) {
	if len(atenNames) < 1000 {
		t.Fatalf("gen_aten_names.go holds %d names; regenerate it with tools/gen_aten_names.py", len(atenNames))
	}
	for _, n := range Names() {
		if !atenNames[n] {
			t.Errorf("%s (registered at %s) is not an operator of the torch in gen_aten_names.go", n, table[n].Site)
		}
	}
}

package dispatch

import (
	"sort"
	"testing"
)

// TestLoweringTablesAreComplete checks that every rule of the table has a
// lowering case that succeeds in some family's table (the *_lowering_test.go
// files), or an entry in loweringSkips saying why it has none, and that no
// skip entry names a rule that has a case or is not in the table.
func TestLoweringTablesAreComplete(t *testing.T) {
	covered := map[string]bool{}
	for name, cases := range families {
		for _, c := range cases {
			e, ok := Lookup(c.op)
			if !ok {
				t.Errorf("family %s: %s is not in the table", name, c.op)
				continue
			}
			if len(c.want) < 7 || c.want[:7] != "error: " {
				covered[e.Rule.Name] = true
			}
		}
	}
	rules := map[string]bool{}
	for _, n := range Names() {
		rules[table[n].Rule.Name] = true
	}
	var missing []string
	for r := range rules {
		if !covered[r] && loweringSkips[r] == "" {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	for _, r := range missing {
		t.Errorf("%s has no lowering case: add one to its family's table, or a reason to loweringSkips", r)
	}
	for r := range loweringSkips {
		switch {
		case !rules[r]:
			t.Errorf("loweringSkips names %s, which is not a rule of the table", r)
		case covered[r]:
			t.Errorf("loweringSkips names %s, which has a lowering case", r)
		}
	}
	t.Logf("%d rules: %d with lowering cases, %d skipped", len(rules), len(covered), len(loweringSkips))
}

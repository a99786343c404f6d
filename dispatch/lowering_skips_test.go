package dispatch

// loweringSkips lists the rules that have no case in the lowering tables,
// each with the reason; TestLoweringTablesAreComplete keeps it exact.
var loweringSkips = map[string]string{}

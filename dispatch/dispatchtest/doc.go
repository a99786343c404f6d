// Package dispatchtest runs the op table's rules on the PJRT plugin and
// compares their values with references computed in Go. It lives apart from
// package dispatch because running a rule needs the engine, and the engine
// imports dispatch: a test inside dispatch could not import it. It holds
// tests only.
package dispatchtest

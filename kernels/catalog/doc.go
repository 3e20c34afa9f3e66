// Package catalog lists gradtune's kernel families: the one place that
// names them all, explicitly (no registration by init functions).
// Commands, runners and tests find families here; a new family is one
// line in the families list.
package catalog

package fakekube

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csisim/csisim/fakekube/crdschemas"
)

// TestCRDPrintersFollowTheCRDs: the printers of the custom kinds have the
// additionalPrinterColumns of the CRDs they are served from (name, type
// and description, in order, after the name), as the real server's table
// convertor for a CRD does.
func TestCRDPrintersFollowTheCRDs(t *testing.T) {
	crds, err := crdschemas.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	printers := snapshotPrinters()
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			gk := schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}
			p, ok := printers[gk]
			if !ok {
				t.Errorf("%v: no printer", gk)
				continue
			}
			if len(p.columns) != 1+len(v.AdditionalPrinterColumns) {
				t.Errorf("%v: %d columns, the CRD has %d and the name", gk, len(p.columns), len(v.AdditionalPrinterColumns))
				continue
			}
			for i, col := range v.AdditionalPrinterColumns {
				got := p.columns[i+1]
				if got.Name != col.Name || got.Type != col.Type || got.Description != col.Description {
					t.Errorf("%v column %d = %s %s %q, the CRD's %s %s %q", gk, i+1, got.Name, got.Type, got.Description, col.Name, col.Type, col.Description)
				}
			}
		}
	}
}

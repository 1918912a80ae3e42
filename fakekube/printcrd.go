package fakekube

// Printers of kinds that are CustomResourceDefinitions on a real cluster: the
// snapshot kinds.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csisim/csisim/fakekube/crdschemas"
)

// snapshotPrinters prints the snapshot and group snapshot kinds, which are
// CustomResourceDefinitions on a real cluster: by the
// additionalPrinterColumns of the CRDs fakekube serves them from
// (crdschemas, generated from kubernetes-csi/external-snapshotter's types),
// as the real server's table convertor for a CRD does. The CRDs are
// embedded and read at start; one that does not parse is a build mistake
// that every test catches.
func snapshotPrinters() map[schema.GroupKind]kindPrinter {
	crds, err := crdschemas.CRDs()
	if err != nil {
		panic(fmt.Sprintf("fakekube: the embedded CRDs: %v", err))
	}
	printers := map[schema.GroupKind]kindPrinter{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			var columns []crdColumn
			for _, c := range v.AdditionalPrinterColumns {
				columns = append(columns, crdColumn{name: c.Name, typ: c.Type, description: c.Description, jsonPath: c.JSONPath})
			}
			printers[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crdPrinter(nameColumn, columns...)
		}
	}
	return printers
}

// crdColumn is one additionalPrinterColumn of a CustomResourceDefinition.
type crdColumn struct {
	name, typ, description string
	// jsonPath is a simple JSONPath: field names, dot-separated.
	jsonPath string
}

// crdPrinter prints a kind the way the real server's table convertor for
// CustomResourceDefinitions does: the name, then each printer column's
// field, typed by the column (dates as ages); a cell is null (kubectl
// shows it empty) where the field is absent.
func crdPrinter(name metav1.TableColumnDefinition, columns ...crdColumn) kindPrinter {
	defs := []metav1.TableColumnDefinition{name}
	for _, c := range columns {
		defs = append(defs, metav1.TableColumnDefinition{Name: c.name, Type: c.typ, Description: c.description})
	}
	return kindPrinter{columns: defs, row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
		row := make([]any, 1+len(columns))
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{Cells: row}
		}
		row[0] = m.GetName()
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return metav1.TableRow{Cells: row}
		}
		for i, c := range columns {
			v, found, err := unstructured.NestedFieldNoCopy(content, strings.Split(strings.TrimPrefix(c.jsonPath, "."), ".")...)
			if found && err == nil {
				row[i+1] = crdCell(pc, c.typ, v)
			}
		}
		return metav1.TableRow{Cells: row}
	}}
}

// crdCell is a field's value as a cell of the column's type, or nil.
func crdCell(pc *printContext, typ string, v any) any {
	switch typ {
	case "string":
		if s, ok := v.(string); ok {
			return s
		}
		if v != nil {
			return fmt.Sprint(v)
		}
	case "integer":
		switch n := v.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		}
	case "number":
		switch n := v.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return pc.age(t)
		}
	}
	return nil
}

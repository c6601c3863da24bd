#!/bin/sh
# Fails when a Kubernetes manifest of deploy/ is not a valid resource of the Kubernetes API
# (kubernetes-validate --strict: unknown fields, wrong types and missing required fields all
# fail), for the Kubernetes version below. No cluster is needed and none is reached: the schemas
# come inside the pinned package. The kustomizations are rendered with `kubectl kustomize` where
# kubectl is installed (it is not a Debian 12 package; said when it is missing), so the shared
# mode's patches are checked as applied; every whole resource file is checked as it is either way.
# Run by `make test-docs`.
#
# Usage: sh scripts/check-kubernetes-manifests.sh
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${KUBERNETES_VERSION:-1.32.0}
VENV="$ROOT/.venv-kubernetes"
sh "$ROOT/scripts/venv.sh" "$VENV" "$ROOT/scripts/requirements-kubernetes.txt" kubernetes-manifests
WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-k8s.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
validate() { "$VENV/bin/kubernetes-validate" --strict --quiet -k "$VERSION" "$@"; }

# The validator must be able to fail: a Deployment with a field of the wrong type is refused.
sed 's/^\(  replicas: \)[0-9]*$/\1"three"/' "$ROOT/deploy/kubernetes/deployment.yaml" >"$WORK/broken.yaml"
grep -q 'replicas: "three"' "$WORK/broken.yaml" || { echo "kubernetes-manifests: could not make the broken copy" >&2; exit 1; }
if validate "$WORK/broken.yaml" >/dev/null 2>&1; then
    echo "kubernetes-manifests: the validator accepted a Deployment with replicas: \"three\"" >&2
    exit 1
fi

files=""
for file in "$ROOT"/deploy/kubernetes/*.yaml "$ROOT"/deploy/kubernetes-shared/*.yaml; do
    case "$(basename "$file")" in
        kustomization.yaml | *-patch.yaml) continue ;;  # not resources by themselves
    esac
    files="$files $file"
done
# shellcheck disable=SC2086
validate $files
rendered=0
if command -v kubectl >/dev/null 2>&1; then
    for dir in kubernetes kubernetes-shared; do
        kubectl kustomize "$ROOT/deploy/$dir" >"$WORK/$dir.yaml"
        validate "$WORK/$dir.yaml"
        rendered=$((rendered + 1))
    done
    echo "kubernetes-manifests: $(echo $files | wc -w) resource files and 2 rendered kustomizations valid for Kubernetes $VERSION"
else
    echo "kubernetes-manifests: $(echo $files | wc -w) resource files valid for Kubernetes $VERSION; kubectl is not installed, so the kustomizations (the shared mode's patches) were not rendered and checked"
fi

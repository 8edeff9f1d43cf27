"""Validating a driver profile before any lab starts (DEP-02): schema, template parameters,
manifest files, the chart (rendered with helm), the containers the profile names, image
archives. Every problem is listed at once, so a vendor fixes a profile in one round instead of
one lab start per mistake; `dralab certify` refuses (exit 2) on any. A schema error hides
nothing that can be checked without the whole profile: the files and image archives of the
fields that are valid on their own are checked too.

Image archives are streamed, never extracted: only the small JSON members (index, manifests,
configs) are kept, so a large archive costs one sequential read.
"""

from __future__ import annotations

import json
import posixpath
import re
import tarfile
import zlib
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from basics.errors import BadInput
from basics.yaml_profiles import field_errors, load_yaml, profile_path
from clusters import versions
from drivers_under_test.deploy import target_problems
from drivers_under_test.helm_chart import render_chart
from drivers_under_test.profile import NO_HARDWARE, PROFILES_DIR, WHAT, DriverProfile

VARIANT_NAME = re.compile(r"^[a-z0-9][-a-z0-9]*$")

# Stand-ins for what a lab sets (deploy.lab_parameters; LAB_PARAMETERS but NAMESPACE, which comes
# from the profile), shaped like the real values so the manifests parse as they will in a lab.
LAB_EXAMPLE = {
    "KUBELET_ROOT_DIR": "/var/lib/kubelet",
    "DRIVERS_IMAGE": "dralab.dev/drivers:0123456789ab",
    "HARDWARE_SYSFS_ROOT": "/var/lib/dralab-hardware/sys",
    "HARDWARE_DRIVER_ROOT": "/var/lib/dralab-hardware/driver-root",
    "KUBERNETES_VERSION": versions.KUBERNETES,
}

# Image metadata (index, manifests, configs) is kilobytes; members above this are layers.
MAX_JSON = 4 << 20
NO_PLATFORM = (
    "`ctr images import` and the kubelet refuse an image without its platform: build it for one, "
    "e.g. `docker buildx build --platform linux/amd64`"
)


class _Bad(Exception):
    """A structural problem of an image archive; the message names the member."""


def validate(name_or_path: str, known_ids: set[str] | None = None) -> tuple[DriverProfile | None, list[str]]:
    """The profile (None when the file or its schema is wrong) and every problem found, each
    naming the file, the field or manifest, and the fix. With `known_ids`, each variant's
    `breaks` must name known requirements."""
    try:
        path = profile_path(name_or_path, PROFILES_DIR, WHAT)
        data = load_yaml(path, WHAT)
    except BadInput as e:
        return None, [str(e)]
    try:
        profile = DriverProfile.model_validate(data).model_copy(update={"source": path.resolve()})
    except ValidationError as e:
        readable = _readable_part(data, path)
        return None, (
            [f"{WHAT} {path}: {line}" for line in field_errors(e)]
            + readable.reference_problems()
            + _archive_problems(readable)
            + _variant_problems(readable, path, known_ids)
        )
    return profile, (
        profile.reference_problems()
        + _rendering_problems(profile)
        + _archive_problems(profile)
        + _variant_problems(profile, path, known_ids)
    )


def _readable_part(data: object, path: Path) -> DriverProfile:
    """The fields of a profile the schema refuses that are valid on their own, unchecked as a
    whole (model_construct): enough to check the files and image archives they name."""
    raw = data if isinstance(data, dict) else {}
    # Required fields the checks read, when unreadable (a schema error already): nothing to check.
    readable: dict[str, Any] = {"hardware": NO_HARDWARE, "images": []}
    for name, field in DriverProfile.model_fields.items():
        key = field.alias or name
        if key in raw:
            try:
                readable[name] = TypeAdapter(field.rebuild_annotation()).validate_python(raw[key])
            except ValidationError:
                pass  # listed with the schema errors
    return DriverProfile.model_construct(**{**readable, "source": path.resolve()})


def _rendering_problems(profile: DriverProfile) -> list[str]:
    """Every variant's rendering (a variant may set what its own manifests use, or override what
    the profile's use): template and chart problems, and container settings that name nothing
    rendered; a problem the variants share is listed once."""
    chart = profile.chart
    problems: list[str] = []
    # A missing manifest, chart or values file is in reference_problems; a chart of the module is
    # found once the module is downloaded.
    try:
        chart_found = chart is not None and profile.chart_path().exists() and all(profile.path(v).is_file() for v in chart.values_files)
    except BadInput as e:
        chart_found, problems = False, [str(e)]
    for r in profile.renderings(LAB_EXAMPLE, [None, *profile.variants]):
        found = [profile.read_manifest(m, r.params) for m in r.manifests if profile.path(m).is_file()]
        if chart_found:
            found.append(render_chart(profile, r.params, r.chart_variant))
        objects = [o for docs, _ in found for o in docs]
        template_problems = [p for _, more in found for p in more]
        problems += template_problems
        # Names are only what they will be once everything renders as it should.
        if not template_problems and len(found) == len(r.manifests) + (chart is not None):
            problems += [p for v in r.variants for p in target_problems(profile, v, objects)]
    return list(dict.fromkeys(problems))


def _archive_problems(profile: DriverProfile) -> list[str]:
    return [
        p
        for i in profile.images
        if i.archive is not None and profile.path(i.archive).is_file()
        for p in archive_problems(profile.path(i.archive))
    ]


def validate_or_raise(names: list[str], known_ids: set[str] | None = None) -> list[DriverProfile]:
    """The profiles, or BadInput listing every problem of every profile (a header per profile):
    what `dralab certify` calls before any lab starts."""
    results = [(name, *validate(name, known_ids)) for name in names]
    failed = [(name, problems) for name, _, problems in results if problems]
    if failed:
        raise BadInput(
            "\n".join(
                f"driver profile {name}: {len(problems)} problem(s)\n" + "\n".join("  - " + p.replace("\n", "\n    ") for p in problems)
                for name, problems in failed
            )
        )
    return [profile for _, profile, _ in results if profile is not None]


def _variant_problems(profile: DriverProfile, path: Path, known_ids: set[str] | None) -> list[str]:
    """Variant names become label values and CLI arguments; `breaks` must name requirements
    the suites have, or a broken variant (MUT-01) proves nothing."""
    problems = [
        f"{WHAT} {path}: variants.{name}: the name must match {VARIANT_NAME.pattern} (lower case letters, digits, dashes)"
        for name in profile.variants
        if not VARIANT_NAME.match(name)
    ]
    if known_ids is not None:
        for name, variant in profile.variants.items():
            unknown = [i for i in variant.breaks if i not in known_ids]
            if unknown:
                problems.append(
                    f"{WHAT} {path}: variants.{name}.breaks: unknown requirement ID(s) "
                    f"{', '.join(unknown)}: name requirements the suites have"
                )
    return problems


def archive_problems(path: Path) -> list[str]:
    """Whether an image tarball is one `ctr images import` takes: an OCI image layout or a
    docker-archive whose image configs carry os and architecture."""
    try:
        files = _json_members(path)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        return [f"image archive {path} cannot be read as a tar: {e}"]
    try:
        if "index.json" in files:
            configs = _oci_configs(files)
        elif "manifest.json" in files:
            configs = _docker_configs(files)
        else:
            return [
                f"image archive {path} is neither an OCI image layout (index.json) nor a docker-archive "
                "(manifest.json): write it with `docker save`, `skopeo copy ... oci-archive:` or "
                "`ctr images export`"
            ]
    except _Bad as e:
        return [f"image archive {path}: {e}"]
    problems = []
    for where, config in configs:
        missing = [k for k in ("os", "architecture") if not config.get(k)]
        if missing:
            problems.append(f"image archive {path}: {where} has no {' and no '.join(missing)}; {NO_PLATFORM}")
    return problems


def _json_members(path: Path) -> dict[str, bytes | int]:
    """One streaming pass: the content of each small regular member, the size of each big one,
    by normalized name; links resolve to their target's entry."""
    files: dict[str, bytes | int] = {}
    links: dict[str, str] = {}
    with tarfile.open(path, "r|*") as tar:
        for member in tar:
            name = posixpath.normpath(member.name.lstrip("/"))
            if member.isfile():
                extracted = tar.extractfile(member)
                files[name] = extracted.read() if extracted and member.size <= MAX_JSON else member.size
            elif member.issym():
                links[name] = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.linkname)).lstrip("/")
            elif member.islnk():
                links[name] = posixpath.normpath(member.linkname.lstrip("/"))
    for name, target in links.items():
        if target in files:
            files[name] = files[target]
    return files


def _load(files: dict[str, bytes | int], name: str, what: str, shape: type = dict) -> Any:
    """A JSON member of the archive, which must be a `shape` (object or list)."""
    content = files.get(name)
    if content is None:
        raise _Bad(f"{what} ({name}) is not in the archive")
    if isinstance(content, int):
        raise _Bad(f"{what} ({name}) is {content} bytes, too big for image metadata")
    try:
        loaded = json.loads(content)
    except ValueError as e:
        raise _Bad(f"{what} ({name}) is not JSON: {e}") from None
    if not isinstance(loaded, shape):
        raise _Bad(f"{what} ({name}) is not a JSON {'object' if shape is dict else 'list'}")
    return loaded


def _blob(digest: object) -> str:
    """Where an OCI layout keeps the blob of a descriptor's digest."""
    if not isinstance(digest, str) or ":" not in digest:
        raise _Bad(f"descriptor digest {digest!r} is not algorithm:hex")
    algorithm, _, hex_ = digest.partition(":")
    return f"blobs/{algorithm}/{hex_}"


def _oci_configs(files: dict[str, bytes | int]) -> list[tuple[str, dict[str, Any]]]:
    """Each image config an OCI layout holds, following nested indexes. Manifests whose blobs
    are absent are skipped: `ctr images export` of a multi-platform image keeps only the blobs
    of its own platform, and that imports fine; an archive with no image at all does not."""

    def walk(index: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
        manifests = index.get("manifests")
        if not isinstance(manifests, list):
            raise _Bad(f"{where} has no manifests list")
        configs = []
        for desc in manifests:
            digest = desc.get("digest") if isinstance(desc, dict) else None
            name = _blob(digest)
            if name not in files:
                continue
            blob = _load(files, name, f"manifest {digest}")
            if "manifests" in blob:
                configs += walk(blob, f"index {digest}")
                continue
            config = blob.get("config")
            if not isinstance(config, dict):
                raise _Bad(f"manifest {digest} has no config descriptor")
            what = f"config {config.get('digest')} of manifest {digest}"
            configs.append((what, _load(files, _blob(config.get("digest")), what)))
        return configs

    configs = walk(_load(files, "index.json", "the index"), "index.json")
    if not configs:
        raise _Bad("none of the image manifests index.json names is in the archive")
    return configs


def _docker_configs(files: dict[str, bytes | int]) -> list[tuple[str, dict[str, Any]]]:
    """Each image config a docker-archive's manifest.json names."""
    entries = _load(files, "manifest.json", "the image list", list)
    if not entries:
        raise _Bad("manifest.json lists no image")
    configs = []
    for i, entry in enumerate(entries):
        name = entry.get("Config") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise _Bad(f"manifest.json entry {i} has no Config")
        loaded = _load(files, posixpath.normpath(name.lstrip("/")), f"the config of manifest.json entry {i}")
        configs.append((f"config {name}", loaded))
    return configs

"""ollama:NAME[:TAG] -> the GGUF blob Ollama keeps for it, as the tool resolves it
(tools/cli/ollama.c; the C library itself takes only paths). The store is $OLLAMA_MODELS or
~/.ollama/models; the manifest manifests/registry.ollama.ai/library/NAME/TAG (TAG "latest" by
default; NAME with one '/' is NAMESPACE/NAME, with two HOST/NAMESPACE/NAME) lists layers, and the
one of media type application/vnd.ollama.image.model is blobs/sha256-<hex>."""

import json
import os
import re

MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
_COMPONENT = re.compile(r"[A-Za-z0-9._-]+")


def _fail(code, message, spec):
    from . import FileError, _error
    return _error(FileError, code, message, path="ollama:" + spec)


def _safe(part):
    """Letters, digits, '.', '-', '_', and not "." or "..": a name cannot walk out of the store."""
    return _COMPONENT.fullmatch(part) is not None and part not in (".", "..")


def blob_path(spec):
    store = os.environ.get("OLLAMA_MODELS") or os.path.join(os.path.expanduser("~"), ".ollama",
                                                            "models")
    if not os.path.isdir(store):
        raise _fail("NOT_FOUND", f"no Ollama store at {store} (set OLLAMA_MODELS)", spec)
    name, _, tag = spec.rpartition(":") if ":" in spec else (spec, "", "latest")
    parts = name.split("/")
    if len(parts) > 3 or not all(map(_safe, parts + [tag])):
        raise _fail("INVALID_ARG",
                    f"'{spec}' is not a model name (NAME[:TAG], letters, digits, . - _)", spec)
    prefix = ("registry.ollama.ai/library/", "registry.ollama.ai/", "")[len(parts) - 1]
    manifest = os.path.join(store, "manifests", prefix + name, tag)
    try:
        with open(manifest, encoding="utf-8") as fp:
            layers = json.load(fp).get("layers", [])
    except FileNotFoundError:
        raise _fail("NOT_FOUND", f"no model '{spec}' in the Ollama store {store} (no {manifest})",
                    spec) from None
    except (OSError, ValueError, AttributeError) as e:
        raise _fail("IO", f"manifest {manifest}: {e}", spec) from None
    for layer in layers if isinstance(layers, list) else []:
        if isinstance(layer, dict) and layer.get("mediaType") == MODEL_MEDIA_TYPE:
            digest = layer.get("digest")
            if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                raise _fail("BAD_VALUE",
                            f"manifest {manifest}: the model layer's digest is not sha256:<64 hex>",
                            spec)
            blob = os.path.join(store, "blobs", "sha256-" + digest[len("sha256:"):])
            if not os.path.exists(blob):
                raise _fail("NOT_FOUND", f"the manifest {manifest} names the blob {blob}, which is "
                            "missing", spec)
            return blob
    raise _fail("BAD_VALUE", f"manifest {manifest} has no layer of media type {MODEL_MEDIA_TYPE}",
                spec)

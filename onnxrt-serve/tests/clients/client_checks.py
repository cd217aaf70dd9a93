"""What the tritonclient check scripts share: one line per check, a count at the end, and the
message of the InferenceServerException a call raises."""

from tritonclient.utils import InferenceServerException

counts = {"passed": 0, "failed": 0}


def check(what: str, ok: bool, detail: str = "") -> None:
    if ok:
        counts["passed"] += 1
        print(f"ok   {what}")
    else:
        counts["failed"] += 1
        print(f"FAIL {what}: {detail}")


def raises(call) -> str:
    """The message of the InferenceServerException `call` raises, or '' if it raises none."""
    try:
        call()
    except InferenceServerException as error:
        return str(error) or "(empty message)"
    return ""


def summary() -> int:
    """Prints `checks: N passed, M failed`; the exit status (1 if any failed)."""
    print(f"checks: {counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0

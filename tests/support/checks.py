"""What the Python service tests share: one line per check, measured against expected, and the
count of passes and failures for the exit status."""

passed = 0
failed = 0


def check(cond, what, detail=""):
    """Prints "ok" or "FAIL", the check and what was seen; returns cond."""
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + what + (": " + str(detail) if detail != "" else ""))
    else:
        failed += 1
        print("FAIL " + what + (": " + str(detail)[:600] if detail != "" else ""))
    return cond

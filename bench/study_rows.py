"""What bench/option_study.sh and bench/session_study.sh print of one run: the two rates as the
simulator's table prints them (the JSON rounds to 4 digits) and waits in the report's units."""


def table_figures(path):
    """Occupancy and entitlement delivered from `hourglass sim`'s table, as printed."""
    figures = {}
    for line in open(path):
        for name in ("occupancy", "entitlement delivered"):
            if line.startswith(name + " "):
                figures[name] = line.split()[-1]
    return figures


def wait(seconds):
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 86400 else f"{seconds / 86400:.1f} d"


def p90(waits, key):
    return wait(waits[key]["p90"]) if key in waits else "-"

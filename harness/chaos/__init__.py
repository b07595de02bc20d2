"""The fault campaign (``python -m harness chaos``, and a short run inside ``verify``).

Accounts submit steadily over HTTP while worker and web processes are SIGKILLed
and restarted on a seeded schedule; clients resend a submit whose answer was
lost with the same request key. Then stuck work is driven to an end from
outside (clocks advanced in the site's database, the site's own ``maintain``)
and the books are checked.

    schedule.py  the seeded kill plan
    inputs.py    the texts the clients upload, and what each must become
    load.py      the clients
    faults.py    carrying out the kill plan
    settle.py    advancing the site's clocks and running its maintenance
    gather.py    the evidence: rows, result bytes, resent request keys
    checks.py    what the evidence must show
    results.py   the report (chaos.json) and its summary
    run.py       the campaign from start to end
"""

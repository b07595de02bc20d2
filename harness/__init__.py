"""sitekit harness: provision services, render N sites, run them side by side, verify, report."""

from pathlib import Path

KIT_ROOT = Path(__file__).resolve().parent.parent

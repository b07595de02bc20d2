"""Mailed links: password reset, address verification and email change (SPEC §4.1). Owns no table:
the tokens are auth's (``auth.tokens``), the mails the outbox's (``mail.outbox``)."""

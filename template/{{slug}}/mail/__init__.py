"""Mail: the outbox (written in the transaction of what caused a mail), its composition, and sending it
through SMTP after the commit — by the worker, or by maintenance for anything left unsent."""

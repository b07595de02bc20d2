"""Credits: the quote on a task, holds, captures and refunds, the owner's balance and ledger."""

"""Durable tasks: submit (store), delivery, claim and recovery (lifecycle), execution
(consumer, processors), results, dead letters and the HTTP routes."""

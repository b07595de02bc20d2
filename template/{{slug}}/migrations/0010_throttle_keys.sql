-- Login throttling per account *from one address* (so a stranger's guesses never lock the owner
-- out) and registrations per client address: two more key shapes in login_throttle.

ALTER TABLE login_throttle DROP CONSTRAINT login_throttle_key_shape;
ALTER TABLE login_throttle ADD CONSTRAINT login_throttle_key_shape
    CHECK (key ~ '^(account|address|register):.{1,200}$');

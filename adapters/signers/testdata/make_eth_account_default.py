# Made eth_account_default.json (python3 make_eth_account_default.py > eth_account_default.json; pycryptodome installed).
# A v3 keystore as Python's eth-account (eth-keyfile) writes it by default: scrypt n=2^18, r=1, p=8, dklen 32,
# AES-128-CTR, MAC keccak-256(derived[16:32] + ciphertext). Built with pycryptodome, the library eth-keyfile uses.
import json, os, uuid
from Crypto.Protocol.KDF import scrypt
from Crypto.Cipher import AES
from Crypto.Util import Counter
from Crypto.Hash import keccak

key = bytes.fromhex("2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6")  # Anvil's tenth dev key
password = "eth-account default"
salt = os.urandom(16)
iv = os.urandom(16)
derived = scrypt(password.encode(), salt, 32, N=1 << 18, r=1, p=8)
cipher = AES.new(derived[:16], AES.MODE_CTR, counter=Counter.new(128, initial_value=int.from_bytes(iv, "big")))
ciphertext = cipher.encrypt(key)
mac = keccak.new(digest_bits=256, data=derived[16:32] + ciphertext).hexdigest()
print(json.dumps({
  "address": "a0ee7a142d267c1f36714e4a8f75612f20a79720",
  "crypto": {
    "cipher": "aes-128-ctr", "cipherparams": {"iv": iv.hex()}, "ciphertext": ciphertext.hex(),
    "kdf": "scrypt", "kdfparams": {"dklen": 32, "n": 1 << 18, "r": 1, "p": 8, "salt": salt.hex()}, "mac": mac,
  },
  "id": str(uuid.uuid4()), "version": 3,
}, indent=2))

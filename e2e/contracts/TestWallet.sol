// SPDX-License-Identifier: MIT
pragma solidity ^0.8.0;

/// A minimal smart-contract wallet for the e2e tests: one owner key, ERC-1271 `isValidSignature` accepting
/// the owner's plain ECDSA signature of the digest, as a one-owner Safe does for a v 27/28 signature.
contract TestWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) return 0xffffffff;
        address signer = ecrecover(digest, v, r, s);
        return signer != address(0) && signer == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}

/// Deploys TestWallets at addresses known in advance (CREATE2), so a wallet can sign before it exists (ERC-6492).
contract TestWalletFactory {
    event Deployed(address wallet, address owner);

    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = predict(owner, salt);
        if (wallet.code.length > 0) return wallet;
        wallet = address(new TestWallet{salt: salt}(owner));
        emit Deployed(wallet, owner);
    }

    function predict(address owner, bytes32 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(TestWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, codeHash)))));
    }
}

